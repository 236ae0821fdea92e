"""Batched, fenced acknowledgement of ``atomic=False`` jobs (one UPDATE per batch).

A body that commits its own writes as it goes needs no per-job completion transaction: its
completion waits here and joins one UPDATE for up to ``ACK_BATCH`` jobs, flushed within
``ACK_FLUSH``. A crash before the flush re-runs the body (at-least-once, which the job's
idempotency key makes safe); a stale fence in a batch refuses that job only.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import datetime

from django.db import connections

from ..core import clock
from ..core.enums import RunOutcome
from ..jobs import transitions
from ..jobs.claims import ClaimedJob
from ..runtime.outage import Outage, is_outage
from ..sql import hot_cursor

logger = logging.getLogger(__name__)


class Acknowledger(threading.Thread):
    """The thread that flushes completions of ``atomic=False`` jobs in batches; each job's end
    goes to ``finished(job, outcome, started)``."""

    def __init__(
        self,
        *,
        alias: str,
        outage: Outage,
        stop_event: threading.Event,
        finished: Callable[[ClaimedJob, RunOutcome, float], None],
        batch: int,
        flush_seconds: float,
    ) -> None:
        super().__init__(name="litejobs-acks", daemon=True)
        self.alias = alias
        self.outage = outage
        self.stop_event = stop_event
        self.finished = finished
        self.batch = max(1, batch)
        self.flush_seconds = flush_seconds
        self._pending: deque[tuple[ClaimedJob, datetime, str | None, float]] = deque()
        self._cond = threading.Condition()
        self._stopping = False

    def add(self, job: ClaimedJob, result_json: str | None, started: float) -> None:
        # Kept as how long the run took, so its end line reports the run, not the flush wait.
        took = time.monotonic() - started
        with self._cond:
            self._pending.append((job, clock.now(), result_json, took))
            if len(self._pending) == 1 or len(self._pending) >= self.batch:
                self._cond.notify()

    def pending(self) -> int:
        with self._cond:
            return len(self._pending)

    def stop(self) -> None:
        """Flush what is pending, then end the thread."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        self.join()

    def run(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._pending and not self._stopping:
                        self._cond.wait()
                    if not self._pending and self._stopping:
                        return
                    deadline = time.monotonic() + self.flush_seconds
                    while len(self._pending) < self.batch and not self._stopping:
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            break
                        self._cond.wait(remaining)
                    batch = [
                        self._pending.popleft() for _ in range(min(self.batch, len(self._pending)))
                    ]
                self._flush(batch)
        finally:
            connections.close_all()

    def _flush(self, batch: list[tuple[ClaimedJob, datetime, str | None, float]]) -> None:
        acks = [(job, finished, result) for job, finished, result, _ in batch]
        while True:
            try:
                with hot_cursor(connections[self.alias]) as cursor:
                    completed = transitions.complete_batch(cursor, acks)
                break
            except Exception as error:
                connections[self.alias].close()
                if is_outage(error) and not (self._stopping and self.stop_event.is_set()):
                    time.sleep(self.outage.failed(error))
                    continue
                logger.warning(
                    "acknowledgement of %d jobs not written (%s); they run again after their lease",
                    len(batch),
                    type(error).__name__,
                )
                for job, _, _, took in batch:
                    self.finished(job, RunOutcome.UNACKNOWLEDGED, time.monotonic() - took)
                return
        self.outage.succeeded()
        for job, _, _, took in batch:
            started = time.monotonic() - took
            if job.id in completed:
                self.finished(job, RunOutcome.DONE, started)
            else:
                logger.warning(
                    "job refused id=%s name=%s fence=%s reason=stale-fence (batched ack)",
                    job.id,
                    job.name,
                    job.fence,
                )
                self.finished(job, RunOutcome.REFUSED, started)
