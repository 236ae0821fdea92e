"""Batched, fenced acknowledgement of ``atomic=False`` jobs (one UPDATE per batch).

A body that commits its own writes as it goes needs no per-job completion transaction: its
completion waits here and joins one UPDATE for up to ``ACK_BATCH`` jobs, flushed within
``ACK_FLUSH``. A crash before the flush re-runs the body (at-least-once, which the job's
idempotency key makes safe); a stale fence in a batch refuses that job only.

``Acknowledgements`` knows nothing of who waits for its results: the settler's
acknowledgement thread takes each batch (``take``), has it written (``write``) and ends the
jobs by the outcomes it answers.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime

import psycopg
from django.db import connections

from ..core import clock
from ..core.enums import RunOutcome
from ..jobs import transitions
from ..jobs.claims import ClaimedJob
from ..runtime.outage import Outage, is_outage
from ..sql.cursors import hot_cursor

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ack:
    """A completion waiting for its batch."""

    job: ClaimedJob
    finished: datetime
    result_json: str | None
    #: How long the run took, so its end line reports the run, not the flush wait.
    took: float


@dataclass(frozen=True)
class Acked:
    """How a batched completion came out: ``done``, ``refused`` or ``unacknowledged``."""

    job: ClaimedJob
    outcome: RunOutcome
    #: When the run started (monotonic), for its end line.
    started: float


class Acknowledgements:
    """The completions of ``atomic=False`` jobs waiting to be written in batches; thread-safe."""

    def __init__(
        self,
        *,
        alias: str,
        outage: Outage,
        stop_event: threading.Event,
        batch: int,
        flush_seconds: float,
    ) -> None:
        self.alias = alias
        self.outage = outage
        self.stop_event = stop_event
        self.batch = max(1, batch)
        self.flush_seconds = flush_seconds
        self._pending: deque[Ack] = deque()
        self._cond = threading.Condition()
        self._stopping = False

    def add(self, job: ClaimedJob, result_json: str | None, started: float) -> None:
        took = time.monotonic() - started
        with self._cond:
            self._pending.append(Ack(job, clock.now(), result_json, took))
            if len(self._pending) == 1 or len(self._pending) >= self.batch:
                self._cond.notify()

    def pending(self) -> int:
        with self._cond:
            return len(self._pending)

    def close(self) -> None:
        """No more completions come: ``take`` answers what is pending, then None."""
        with self._cond:
            self._stopping = True
            self._cond.notify()

    def take(self) -> list[Ack] | None:
        """The next batch, once it is full or ``flush_seconds`` after it began (at once when
        closing); None once closed with nothing pending."""
        with self._cond:
            while not self._pending and not self._stopping:
                self._cond.wait()
            if not self._pending:
                return None
            deadline = time.monotonic() + self.flush_seconds
            while len(self._pending) < self.batch and not self._stopping:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            return [self._pending.popleft() for _ in range(min(self.batch, len(self._pending)))]

    def write(self, batch: list[Ack]) -> list[Acked]:
        """Write ``batch``'s completions in one fenced UPDATE on the calling thread's
        connection, riding out a database outage (until the worker stops); answers how each
        came out. A deadlock or serialization failure rolled the whole batch back: it is
        written again at once (a few times)."""
        retries = _RETRIES
        while True:
            try:
                with hot_cursor(connections[self.alias]) as cursor:
                    completed = transitions.complete_batch(
                        cursor, [(ack.job, ack.finished, ack.result_json) for ack in batch]
                    )
                break
            except Exception as error:
                connections[self.alias].close()
                if _transient(error) and retries:
                    retries -= 1
                    continue
                if is_outage(error) and not (self._stopping and self.stop_event.is_set()):
                    time.sleep(self.outage.failed(error))
                    continue
                logger.warning(
                    "acknowledgement of %d jobs not written (%s); they run again after their lease",
                    len(batch),
                    type(error).__name__,
                )
                return [_acked(ack, RunOutcome.UNACKNOWLEDGED) for ack in batch]
        self.outage.succeeded()
        return [_acked(ack, _outcome(ack.job, completed)) for ack in batch]


#: How often a batch rolled back by a deadlock or a serialization failure is written again.
_RETRIES = 3


def _transient(error: BaseException) -> bool:
    """Whether ``error`` (or the driver's error under Django's) rolled back a statement that
    may simply be run again."""
    found = error.__cause__ if isinstance(error.__cause__, psycopg.Error) else error
    return isinstance(found, psycopg.errors.DeadlockDetected | psycopg.errors.SerializationFailure)


def _outcome(job: ClaimedJob, completed: set[int]) -> RunOutcome:
    if job.id in completed:
        return RunOutcome.DONE
    logger.warning(
        "job refused id=%s name=%s fence=%s reason=stale-fence (batched ack)",
        job.id,
        job.name,
        job.fence,
    )
    return RunOutcome.REFUSED


def _acked(ack: Ack, outcome: RunOutcome) -> Acked:
    return Acked(ack.job, outcome, time.monotonic() - ack.took)
