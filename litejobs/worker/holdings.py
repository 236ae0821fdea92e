"""The jobs a worker holds under lease, from claim to the end of their completion write."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ..context import JobContext
from ..store import ClaimedJob


@dataclass
class Held:
    """One held job and what the main loop watches about it."""

    job: ClaimedJob
    ctx: JobContext | None = None  # None until a thread starts it
    started: float | None = None  # monotonic
    deadline: float | None = None  # monotonic: the attempt's timeout
    abandon_at: float | None = None  # monotonic: when a timed-out body is given up on
    runner: object | None = None
    progress: str | None = field(default=None, repr=False)  # unsaved progress JSON


class Holdings:
    """Thread-safe map of held jobs by id (claimed, running, or awaiting acknowledgement)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[int, Held] = {}
        self.idle = threading.Condition(self._lock)

    def add(self, jobs: list[ClaimedJob]) -> None:
        with self._lock:
            for job in jobs:
                self._held[job.id] = Held(job)

    def start(self, job: ClaimedJob, ctx: JobContext, timeout: float, runner: object) -> None:
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
