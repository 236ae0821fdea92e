"""Hands claimed jobs to a worker's threads; one thread at a time claims a batch for all."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from ..jobs.claims import ClaimedJob

#: While jobs are taken quickly, a claim takes about as many as the threads took in this many
#: seconds at the rate they took the previous batch...
CLAIM_AHEAD = 0.02
#: ...and never more than this many times the configured batch.
MAX_BATCHES = 8


class Dispatcher:
    """A process-local buffer of claimed jobs shared by the worker's threads.

    A thread that finds the buffer empty claims a batch (when there may be work: a NOTIFY, a
    backstop poll, a due retry, or the previous claim came back full) and shares it, so claim
    statements are amortised over the batch while no thread sits on jobs another could run.

    A claim takes one job for each thread free to start it (at most ``batch``), or, while a
    backlog of quick jobs lasts, as many as the threads get through in ``CLAIM_AHEAD`` (up to
    ``MAX_BATCHES`` batches): the claim's round trip is then spread over more jobs, and a
    worker never holds more than a moment's work that another worker could have run. A slow
    job is never claimed for a thread still busy with another: it stays ready for a worker
    with a free thread.
    """

    def __init__(
        self,
        batch: int,
        max_jobs: int | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.batch = max(1, batch)
        self.max_jobs = max_jobs
        self._monotonic = monotonic
        self._taken = 0  # jobs handed out since the last claim returned
        self._backlog = False  # whether it came back full
        self._since = monotonic()  # when it returned
        self.claimed_total = 0
        self._buffer: deque[ClaimedJob] = deque()
        self._cond = threading.Condition()
        self._claiming = False
        self._wanted = True  # a fresh worker looks once
        self._stopping = False
        self._busy = 0  # threads between taking a job and finishing it
        self._waiting = 0  # threads waiting in next() for a job

    def poke(self) -> None:
        """There may be work: the next idle thread claims."""
        with self._cond:
            self._wanted = True
            self._cond.notify_all()

    def stop(self) -> list[ClaimedJob]:
        """Stop handing out jobs; answers the buffered ones (claimed, never started)."""
        with self._cond:
            self._stopping = True
            left = list(self._buffer)
            self._buffer.clear()
            self._cond.notify_all()
            return left

    @property
    def stopping(self) -> bool:
        return self._stopping

    @property
    def exhausted(self) -> bool:
        """Whether ``max_jobs`` jobs were claimed."""
        return self.max_jobs is not None and self.claimed_total >= self.max_jobs

    def idle(self) -> bool:
        """Nothing buffered, nothing being claimed, nothing running, and no reason to look."""
        with self._cond:
            return not (self._buffer or self._claiming or self._busy or self._wanted)

    def done_with_one(self) -> None:
        """A thread finished the job it took."""
        with self._cond:
            self._busy -= 1
            self._cond.notify_all()

    def next(
        self, claim: Callable[[int], list[ClaimedJob]], wait: float = 1.0
    ) -> ClaimedJob | None:
        """The next job for the calling thread, or None when stopping.

        ``claim(limit)`` is called outside the lock by at most one thread at a time.
        """
        while True:
            with self._cond:
                while True:
                    if self._stopping:
                        return None
                    if self._buffer:
                        self._busy += 1
                        self._taken += 1
                        return self._buffer.popleft()
                    if self._wanted and not self._claiming and not self.exhausted:
                        self._claiming = True
                        break
                    self._waiting += 1
                    try:
                        self._cond.wait(wait)
                    finally:
                        self._waiting -= 1
                limit = self._limit(free=self._waiting + 1)
            self._run_claim(claim, limit)

    def claim_for_waiting(self, claim: Callable[[int], list[ClaimedJob]]) -> None:
        """There is work now: when a thread waits for a job and none is claiming, claim it
        here, on the caller's thread (``claim(limit)``), and hand it over; else ``poke()``.

        The main loop calls this as a wake-up arrives, so the claim runs on the connection
        that delivered it and the waiting thread starts the body as soon as it is woken.
        """
        with self._cond:
            if not self._waiting or self._buffer or self._claiming or self._stopping:
                self._wanted = True
                self._cond.notify_all()
                return
            if self.exhausted:
                return
            self._claiming = True
            limit = self._limit(free=self._waiting)
        try:
            self._run_claim(claim, limit)
        except BaseException:
            self.poke()  # a thread claims again (and rides out an outage) instead
            raise

    def _limit(self, free: int) -> int:
        """The next claim's size (under the lock), with ``free`` threads waiting to start it."""
        size = min(self.batch, free)
        elapsed = self._monotonic() - self._since
        if self._backlog and elapsed > 0:
            pace = round(self._taken * CLAIM_AHEAD / elapsed)
            size = max(size, min(pace, self.batch * MAX_BATCHES))
        if self.max_jobs is not None:
            size = min(size, self.max_jobs - self.claimed_total)
        return size

    def _run_claim(self, claim: Callable[[int], list[ClaimedJob]], limit: int) -> None:
        """Run ``claim(limit)`` (``_claiming`` is set) and buffer what it took."""
        jobs: list[ClaimedJob] = []
        try:
            jobs = claim(limit)
        finally:
            with self._cond:
                self._claiming = False
                self._taken = 0
                self._since = self._monotonic()
                self._backlog = len(jobs) >= limit
                self.claimed_total += len(jobs)
                self._buffer.extend(jobs)  # after stop(): left for leftovers()
                if len(jobs) < limit:
                    self._wanted = False
                if self._wanted or self._stopping:
                    self._cond.notify_all()
                else:  # wake only as many waiting threads as there are jobs to take
                    self._cond.notify(len(jobs))

    def leftovers(self) -> list[ClaimedJob]:
        """Jobs claimed after ``stop()`` (a claim that was in flight); they must be released."""
        with self._cond:
            left = list(self._buffer)
            self._buffer.clear()
            return left
