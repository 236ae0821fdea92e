"""The jobs a worker holds under lease, from claim to the end of their completion write, and
the watch that cancels a run whose lease this worker could not renew in time."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from ..core.enums import CancelReason
from ..jobs.claims import ClaimedJob
from ..jobs.context import JobContext

#: A held run is cut off (cancelled, its completion not written) once this share of its lease
#: has passed since the last renewal the database confirmed. The rest of the lease (a quarter;
#: HEARTBEAT is at most half of LEASE, so a heartbeat on time always lands first) is the time
#: the body has to stop before the lease can lapse at the database and another worker claim it.
CUT_OFF_AT = 0.75


class RunnerHandle(Protocol):
    """What the main loop does to the thread running a held job (a ``Runner``)."""

    retired: bool

    def cancel_query_of(self, job: ClaimedJob) -> None: ...

    def end_session_of(self, job: ClaimedJob, end: Callable[[int], object]) -> None: ...


@dataclass
class Held:
    """One held job and what the main loop watches about it."""

    job: ClaimedJob
    renewed: float = 0.0  # monotonic: when the last claim or renewal the database took was sent
    cut_off: bool = False  # its renewal failed for too long: cancelled, to be handed back
    ctx: JobContext | None = None  # None until a thread starts it
    started: float | None = None  # monotonic
    deadline: float | None = None  # monotonic: the attempt's timeout
    abandon_at: float | None = None  # monotonic: when a timed-out body is given up on
    runner: RunnerHandle | None = None  # the thread running it, set with ctx
    progress: str | None = field(default=None, repr=False)  # unsaved progress JSON


class Holdings:
    """Thread-safe map of held jobs by id (claimed, running, or awaiting acknowledgement)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[int, Held] = {}
        self.idle = threading.Condition(self._lock)

    def add(self, jobs: list[ClaimedJob], sent: float) -> None:
        """Hold newly claimed jobs; ``sent`` is when their claim statement was sent (monotonic),
        so their lease at the database runs at least ``LEASE`` from then."""
        with self._lock:
            for job in jobs:
                self._held[job.id] = Held(job, renewed=sent)

    def renewed(self, job_ids: set[int], sent: float) -> None:
        """The database renewed these leases by a statement sent at ``sent`` (monotonic)."""
        with self._lock:
            for job_id in job_ids:
                held = self._held.get(job_id)
                if held is not None:
                    held.renewed = max(held.renewed, sent)

    def unrenewed_since(self, before: float) -> list[Held]:
        """Held jobs, not yet cut off, whose last confirmed renewal was sent before ``before``."""
        with self._lock:
            return [h for h in self._held.values() if not h.cut_off and h.renewed < before]

    def start(self, job: ClaimedJob, ctx: JobContext, timeout: float, runner: RunnerHandle) -> None:
        now = time.monotonic()
        with self._lock:
            held = self._held.get(job.id)
            if held is not None:
                held.ctx, held.started, held.deadline, held.runner = ctx, now, now + timeout, runner

    def get(self, job_id: int) -> Held | None:
        with self._lock:
            return self._held.get(job_id)

    def drop(self, job_id: int) -> Held | None:
        """Forget a job (finished, released, or lost); wakes anyone waiting for idleness."""
        with self._lock:
            held = self._held.pop(job_id, None)
            if not self._held:
                self.idle.notify_all()
            return held

    def snapshot(self) -> list[Held]:
        with self._lock:
            return list(self._held.values())

    def jobs(self) -> list[ClaimedJob]:
        with self._lock:
            return [held.job for held in self._held.values()]

    def __len__(self) -> int:
        with self._lock:
            return len(self._held)

    def wait_empty(self, timeout: float) -> bool:
        """Block until nothing is held or ``timeout`` seconds pass; answers whether empty."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._held:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self.idle.wait(remaining)
            return True

    def set_progress(self, job_id: int, progress_json: str) -> None:
        with self._lock:
            held = self._held.get(job_id)
            if held is not None:
                held.progress = progress_json

    def take_progress(self) -> list[tuple[ClaimedJob, str]]:
        """The unsaved progress of every held job, marking it saved."""
        with self._lock:
            updates = [(h.job, h.progress) for h in self._held.values() if h.progress is not None]
            for held in self._held.values():
                held.progress = None
            return updates


class LeaseWatch(threading.Thread):
    """Cuts off held runs whose lease this worker could not renew for ``CUT_OFF_AT`` of it.

    A thread of its own, reading no database: the main loop may be stuck in a heartbeat on a
    connection the network dropped, and the runs must stop before their lease lapses at the
    database all the same, so they never overlap another worker's claim of the same job. It
    writes its lines to its worker's ``logger``.
    """

    def __init__(
        self,
        holdings: Holdings,
        lease: float,
        stopped: threading.Event,
        tick: float,
        logger: logging.Logger,
    ) -> None:
        super().__init__(name="litejobs-lease-watch", daemon=True)
        self.holdings = holdings
        self.after = lease * CUT_OFF_AT
        self.stopped = stopped
        self.tick = tick
        self.logger = logger

    def run(self) -> None:
        while not self.stopped.wait(self.tick):
            self.check()

    def check(self) -> None:
        """Cut off every held run whose last confirmed renewal is too old."""
        for held in self.holdings.unrenewed_since(time.monotonic() - self.after):
            held.cut_off = True
            self._cut_off(held)

    def _cut_off(self, held: Held) -> None:
        """This worker could not renew ``held``'s lease in time.

        The run is cancelled (``lease_lost``) before its lease can lapse at the database, its
        completion is not written, and the job is handed back uncounted once the body stops
        and the database takes the write (a database outage never costs a job an attempt).
        """
        job = held.job
        job.cut_off = True
        self.logger.warning(
            "job lease not renewed id=%s name=%s fence=%s for=%.1fs: cancelling the run before "
            "its lease can lapse",
            job.id,
            job.name,
            job.fence,
            time.monotonic() - held.renewed,
        )
        if held.ctx is not None:
            held.ctx.cancel(CancelReason.LEASE_LOST)
            held.ctx.cancel_reason = CancelReason.LEASE_LOST
