"""``Scheduler``: one ``runscheduler`` replica — sync declarations, elect a leader, plan.

Any number of replicas run side by side. Each one syncs the declarations it knows to
``Schedule`` rows (declaration columns only: an operator's *disabled* stays disabled), then
every ``SCHEDULER_TICK`` tries to take or renew the leader lease (one row, with a fence).
Only the leader plans: per schedule, one transaction checks the lease is still its own
(``FOR SHARE``, so no takeover lands mid-plan), advances the schedule's ``planned_through``,
records missed instants the misfire policy skips, and inserts each occurrence to run with
its job. Planning is idempotent anyway: an occurrence's identity (schedule, instant) is
unique in PostgreSQL, so a deposed leader racing the new one cannot create one twice.

The loop reads time only through ``litejobs.clock``; a database outage is ridden out like
the worker does (capped backoff, rate-limited logging), SIGTERM/SIGINT stop it and hand the
lease on at once, a second signal exits immediately (the lease then lapses).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db import connections, transaction

from ..conf import settings
from ..core import clock
from ..models import LeaderRole, Schedule, ScheduleStatus
from ..runtime import leadership
from ..runtime.outage import Outage, is_outage
from ..runtime.startup import describe_database
from ..runtime.stopping import GracefulStop
from ..sql.cursors import Cursor, fetch_one, run_query
from . import planning, runs
from .declarations import ScheduleDefinition, all_schedules
from .timetable import jitter_for

logger = logging.getLogger(__name__)

#: A schedule whose planning keeps failing logs it at most this often (seconds).
ERROR_LOG_INTERVAL = 60.0


@dataclass
class StepReport:
    """What one pass did: whether this replica leads, and the occurrences it wrote."""

    leader: bool = False
    planned: int = 0
    skipped: int = 0


class LostLeadership(Exception):
    """The lease changed hands between the pass's start and its plan transaction."""


def sync(
    definitions: list[ScheduleDefinition],
    *,
    now: datetime,
    alias: str | None = None,
    complete: bool = True,
) -> None:
    """Write each declaration to its ``Schedule`` row, never touching operator state.

    New rows start enabled, planning from ``now`` (nothing before the first sync is run).
    When ``definitions`` are all the code declares (``complete``), rows no declaration names
    are marked ``declared=False`` (not planned, never overdue).
    """
    alias = alias or settings.DATABASE
    rows = [
        Schedule(
            name=d.name,
            **d.snapshot(),
            declared=True,
            synced_at=now,
            enabled=True,
            active_since=now,
        )
        for d in definitions
    ]
    snapshot_fields = [*definitions[0].snapshot(), "declared", "synced_at"] if definitions else []
    with transaction.atomic(using=alias):
        if rows:
            Schedule.objects.using(alias).bulk_create(
                rows,
                update_conflicts=True,
                unique_fields=["name"],
                update_fields=snapshot_fields,
            )
        if complete:
            Schedule.objects.using(alias).exclude(name__in=[d.name for d in definitions]).filter(
                declared=True
            ).update(declared=False, synced_at=now)


class Scheduler:
    """Plans occurrences while it leads. ``run()`` blocks and answers an exit code;
    ``step()`` is one pass (tests drive it under an injected clock)."""

    def __init__(self, *, only: list[str] | None = None, install_signals: bool = True) -> None:
        self.id = uuid.uuid4().hex
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.alias = settings.DATABASE
        self.lease = settings.duration("SCHEDULER_LEASE")
        self.tick = settings.duration("SCHEDULER_TICK").total_seconds()
        self.horizon = settings.duration("SCHEDULER_HORIZON")
        self.grace = settings.duration("SCHEDULER_MISFIRE_GRACE")
        #: Sync and plan only these schedules (tests); by default every declared one.
        self.only = set(only) if only is not None else None
        self.install_signals = install_signals
        self.outage = Outage(f"scheduler {self.host}:{self.pid}")
        self.stop_event = threading.Event()
        self.fence: int | None = None
        self.synced = False
        self.counts = {"planned": 0, "skipped": 0}
        self._errors_logged: dict[str, float] = {}

    # The loop ------------------------------------------------------------------------------

    def run(self) -> int:
        """Sync, lead or follow, plan; until SIGTERM/SIGINT. Answers the exit code."""
        if self.install_signals:
            GracefulStop(self.stop_event, logger, f"scheduler id={self.id}").install()
        logger.info(
            "scheduler start id=%s host=%s pid=%s schedules=%s database=%s",
            self.id,
            self.host,
            self.pid,
            len(self.definitions()),
            describe_database(self.alias),
        )
        try:
            while not self.stop_event.is_set():
                try:
                    self.step()
                except Exception as error:
                    if not is_outage(error):
                        raise
                    self.fence = None  # the lease may have moved meanwhile: take it again
                    self.outage.wait_out(error, connections[self.alias], self.stop_event)
                    continue
                self.outage.succeeded()
                self.stop_event.wait(self.tick)
        finally:
            self._resign()
            connections.close_all()
        logger.info("scheduler stop id=%s counts=%s", self.id, self.counts)
        return 0

    def request_stop(self) -> None:
        """Begin a graceful stop (what SIGTERM does)."""
        self.stop_event.set()

    def definitions(self) -> list[ScheduleDefinition]:
        """The declarations this replica plans."""
        return [d for d in all_schedules() if self.only is None or d.name in self.only]

    # One pass ------------------------------------------------------------------------------

    def step(self) -> StepReport:
        """Sync (first pass), take or renew the lease, and plan every schedule if leading."""
        now = clock.now()
        if not self.synced:
            self._sync(now)
            self.synced = True
        fence = self._lead()
        if fence is None:
            if self.fence is not None:
                logger.warning("scheduler lost the leader lease id=%s", self.id)
            self.fence = None
            return StepReport(leader=False)
        if fence != self.fence:
            logger.info("scheduler leads id=%s fence=%s", self.id, fence)
            self._sync(now)  # our declarations win from here
        self.fence = fence
        report = StepReport(leader=True)
        definitions = {d.name: d for d in self.definitions()}
        rows = Schedule.objects.using(self.alias).filter(
            name__in=definitions, enabled=True, status=ScheduleStatus.ACTIVE
        )
        for row in rows:
            definition = definitions[row.name]
            try:
                planned, skipped = self._plan(definition, row, now, fence)
            except LostLeadership:
                logger.warning("scheduler lost the leader lease mid-pass id=%s", self.id)
                self.fence = None
                break
            except Exception as error:
                if is_outage(error):
                    raise
                self._log_error(definition.name, error)
                continue
            report.planned += planned
            report.skipped += skipped
        self.counts["planned"] += report.planned
        self.counts["skipped"] += report.skipped
        return report

    def _sync(self, now: datetime) -> None:
        sync(self.definitions(), now=now, alias=self.alias, complete=self.only is None)

    def _lead(self) -> int | None:
        with connections[self.alias].cursor() as cursor:
            return leadership.lead(
                cursor,
                LeaderRole.SCHEDULER,
                owner=self.id,
                host=self.host,
                pid=self.pid,
                lease=self.lease,
            )

    def _plan(
        self, definition: ScheduleDefinition, row: Schedule, now: datetime, fence: int
    ) -> tuple[int, int]:
        after = max(t for t in (row.planned_through, row.active_since) if t is not None)
        plan = planning.plan(
            definition.timetable,
            after=after,
            now=now,
            horizon=self.horizon,
            grace=self.grace,
            misfire=definition.misfire,
            max_catchup=definition.max_catchup,
        )
        if plan.empty:
            return 0, 0
        planned = 0
        with transaction.atomic(using=self.alias), connections[self.alias].cursor() as cursor:
            if not leadership.still_leader(
                cursor, LeaderRole.SCHEDULER, owner=self.id, fence=fence
            ):
                raise LostLeadership
            run_query(cursor, "schedule_advance", {"id": row.id, "through": plan.through})
            if cursor.fetchone() is None:
                return 0, 0  # disabled meanwhile, or already planned by another leader
            if plan.skip:
                run_query(
                    cursor,
                    "occurrences_skip",
                    {
                        "schedule_id": row.id,
                        "instants": plan.skip,
                        "now": now,
                        "note": f"Missed while no scheduler ran (misfire={definition.misfire}).",
                    },
                )
            for position, instant in enumerate(plan.run):
                caught_up = position < plan.caught_up
                planned += self._start(cursor, definition, row, instant, now, caught_up)
        if plan.caught_up or plan.skip:
            logger.warning(
                "schedule missed instants schedule=%s misfire=%s ran=%s skipped=%s%s",
                definition.name,
                definition.misfire,
                plan.caught_up,
                len(plan.skip),
                " older=unrecorded" if plan.unrecorded else "",
            )
        logger.debug("schedule planned schedule=%s occurrences=%s", definition.name, planned)
        return planned, len(plan.skip)

    def _start(
        self,
        cursor: Cursor,
        definition: ScheduleDefinition,
        row: Schedule,
        instant: datetime,
        now: datetime,
        caught_up: bool,
    ) -> int:
        """Insert one occurrence and its job; 0 when the occurrence already existed."""
        job_row = runs.prepare(definition, instant)
        run_at = instant + jitter_for(definition.name, instant, definition.jitter)
        run_query(
            cursor,
            "occurrence_plan",
            {
                "schedule_id": row.id,
                "scheduled_for": instant,
                "run_at": run_at,
                "now": now,
                "tenant": job_row.tenant,
                "note": f"Missed; run late by misfire={definition.misfire}." if caught_up else "",
            },
        )
        inserted = fetch_one(cursor)
        if inserted is None:
            return 0
        occurrence_id = inserted["id"]
        enqueued = runs.enqueue(
            definition, job_row, occurrence_id=occurrence_id, now=now, run_at=run_at
        )
        if enqueued.deduped:
            logger.warning(
                "occurrence job already live schedule=%s occurrence=%s job=%s",
                definition.name,
                occurrence_id,
                enqueued.id,
            )
        run_query(cursor, "occurrence_link_job", {"id": occurrence_id, "job_id": enqueued.id})
        return 1

    def _log_error(self, name: str, error: Exception) -> None:
        now = time.monotonic()
        if now - self._errors_logged.get(name, -ERROR_LOG_INTERVAL) < ERROR_LOG_INTERVAL:
            return
        self._errors_logged[name] = now
        logger.error(
            "schedule planning failed schedule=%s error=%s: %s; retrying every pass",
            name,
            type(error).__name__,
            str(error).splitlines()[0] if str(error) else "",
            exc_info=error,
        )

    def _resign(self) -> None:
        """Hand the lease on at once (a clean stop); an outage just lets it lapse."""
        if self.fence is not None:
            leadership.resign(self.alias, LeaderRole.SCHEDULER, owner=self.id, logger=logger)
        self.fence = None
