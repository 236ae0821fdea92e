"""The ``Claimer``: how a worker claims due jobs and starts holding them.

The first station of a claimed job's road. A runner that finds the claim buffer empty claims
for all through ``Claimer.claim`` (on its own connection, riding out a database outage); the
main loop claims for a waiting runner through a ``LoopClaim`` (on the connection that
delivered the wake-up), which keeps what the main loop needs to know next. Either way the
claim statement runs with this worker's owner, queues and lease, leaves the jobs this worker
handed back to the others, and the jobs it took are held from the instant it was sent.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager as ContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from ..core import clock
from ..jobs import claims
from ..jobs.claims import ClaimedJob
from ..runtime.outage import Outage, is_outage
from ..sql.cursors import Cursor, hot_cursor
from .dispatch import Dispatcher
from .handbacks import HandedBack
from .holdings import Holdings


class Claimer:
    """Claims due jobs for one worker and holds them; thread-safe."""

    def __init__(
        self,
        *,
        owner: str,
        alias: str,
        queues: list[str],
        lease: timedelta,
        holdings: Holdings,
        dispatcher: Dispatcher,
        handed_back: HandedBack,
        outage: Outage,
        stop_event: threading.Event,
    ) -> None:
        self.owner = owner
        self.alias = alias
        self.queues = queues
        self.lease = lease
        self.holdings = holdings
        self.dispatcher = dispatcher
        self.handed_back = handed_back
        self.outage = outage
        self.stop_event = stop_event
        #: When a rate-limited job left waiting may start: the main loop wakes then.
        self.rate_wake = RateWake(dispatcher.poke)

    def claim(self, limit: int) -> list[ClaimedJob]:
        """Claim up to ``limit`` jobs on the calling runner's connection and hold them, riding
        out a database outage until the worker stops (nothing then)."""
        while not self.dispatcher.stopping:
            try:
                jobs = self.claim_on(connections[self.alias], limit)
            except Exception as error:
                if not is_outage(error):
                    raise
                self.outage.wait_out(error, connections[self.alias], self.stop_event)
                continue
            self.outage.succeeded()
            return jobs
        return []

    def claim_on(self, connection: BaseDatabaseWrapper, limit: int) -> list[ClaimedJob]:
        """Claim up to ``limit`` jobs on ``connection`` and hold them: the jobs without a
        concurrency limit, then, when some are due and room is left, the limited ones (in a
        transaction of their own)."""
        args = self.arguments(limit)
        sent = time.monotonic()
        with hot_cursor(connection) as cursor:
            answer = claims.claim(cursor, **args)
        jobs = answer.jobs
        if answer.limited_due and len(jobs) < limit:
            args["limit"] = limit - len(jobs)
            with transaction.atomic(using=self.alias), hot_cursor(connection) as cursor:
                limited = claims.claim_limited(cursor, **args)
            jobs += limited.jobs
            self.rate_wake.note(limited.wake_at)
        if jobs:
            self.holdings.add(jobs, sent)
        return jobs

    def arguments(self, limit: int) -> claims.Ask:
        """The claim statement's arguments: due at the clock's now, this worker's lease."""
        now = clock.now()
        return {
            "owner": self.owner,
            "queues": self.queues,
            "limit": limit,
            "now": now,
            "lease": self.lease,
            "avoid": self.handed_back.ids(now),
        }

    def on_loop(self, cursor: Callable[[], ContextManager[Cursor]]) -> LoopClaim:
        """A claim for the main loop, on a ``cursor()`` of its connection."""
        return LoopClaim(self, cursor)


class RateWake:
    """Pokes the runners when a rate-limited job a claim left waiting may start: no
    notification announces a window's end. One timer, for the earliest instant noted."""

    def __init__(self, poke: Callable[[], None]) -> None:
        self._poke = poke
        self._lock = threading.Lock()
        self._at: datetime | None = None
        self._timer: threading.Timer | None = None

    def note(self, at: datetime | None) -> None:
        """A claim said a rate-limited job may start at ``at``: poke then (or at an earlier
        instant already noted)."""
        if at is None:
            return
        with self._lock:
            if self._timer is not None and self._at is not None and self._at <= at:
                return
            if self._timer is not None:
                self._timer.cancel()
            self._at = at
            delay = max(0.0, (at - clock.now()).total_seconds())
            self._timer = threading.Timer(delay, self._fire)
            self._timer.daemon = True
            self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            self._at = self._timer = None
        self._poke()

    def cancel(self) -> None:
        """Forget the pending poke (the worker stops)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._at = self._timer = None


@dataclass
class LoopClaim:
    """One claim the main loop runs on the connection whose backend just delivered a wake-up
    (``claim(limit)``, called at most once), and what it saw.

    It takes only the jobs without a concurrency limit: the limited ones' claim takes a
    transaction, so when some are due it says so (``limited_due``) and a runner claims them on
    its own connection.
    """

    claimer: Claimer
    cursor: Callable[[], ContextManager[Cursor]]
    #: The instant the claim looked for due jobs from (None until it ran).
    looked_from: datetime | None = None
    #: Whether concurrency-limited jobs were due, left to a runner.
    limited_due: bool = False

    def __call__(self, limit: int) -> list[ClaimedJob]:
        sent = time.monotonic()
        args = self.claimer.arguments(limit)
        self.looked_from = args["now"]
        with self.cursor() as cursor:
            answer = claims.claim(cursor, **args)
        if answer.jobs:
            self.claimer.holdings.add(answer.jobs, sent)
        self.limited_due = answer.limited_due
        return answer.jobs
