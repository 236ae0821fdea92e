"""The jobs this worker handed back because its code cannot run them, kept out of its claims.

In a rolling deploy a worker of the old release hands back what only the new release can run.
If it went on claiming those jobs it would keep winning the claim race against the new
workers for every one of them as it falls due again; so it leaves each job it handed back to
the others until ``UNKNOWN_JOB_GRACE`` has passed since the job's first hand-back, and then
claims it once more only to dead-letter it if no worker that can run it took it.
"""

from __future__ import annotations

import threading
from datetime import datetime

#: At most this many handed-back jobs are remembered (the oldest are forgotten first); a
#: forgotten job may be claimed and handed back again, as it would be with no memory.
LIMIT = 1000


class HandedBack:
    """Job ids this worker must not claim, each until an instant (thread-safe)."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self._until: dict[int, datetime] = {}
        self._lock = threading.Lock()

    def add(self, job_id: int, until: datetime) -> None:
        """Leave ``job_id`` to other workers until ``until``."""
        with self._lock:
            self._until.pop(job_id, None)
            self._until[job_id] = until
            while len(self._until) > self.limit:
                del self._until[next(iter(self._until))]

    def ids(self, now: datetime) -> list[int]:
        """The ids to leave alone at ``now`` (those whose instant has passed are forgotten)."""
        with self._lock:
            if not self._until:
                return []
            for job_id in [j for j, until in self._until.items() if until <= now]:
                del self._until[job_id]
            return list(self._until)
