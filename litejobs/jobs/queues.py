"""Job queues: the operator's pause and resume, the overview, and what ``doctor`` finds.

A queue is a name jobs are declared with (``@job(queue=...)``); workers serve some or all of
them. An operator pauses a queue to stop claims from it (running jobs finish) and resumes it;
the switch is a ``QueueState`` row the claim statement reads. ``declared_queues`` answers every
queue something declares, with what uses it: job declarations, and what features register in
``queue_users`` (webhook deliveries, Django Tasks backends), so a misspelt ``--queues`` or
``pause`` is warned about.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connections, transaction
from django.db.models import Count, Min, QuerySet
from django.utils.translation import ngettext

from ..conf import settings
from ..core import clock
from ..core.diagnostics import Problem, note
from ..core.durations import format_age
from ..core.enums import CLAIMABLE, JobState, OperatorVerb
from ..core.registry import Registry
from ..core.spelling import did_you_mean
from ..exceptions import InvalidInput
from ..models import Job, QueueState, Worker
from ..models.jobs import NOTIFY_CHANNEL
from ..sql.cursors import fetch_all, run_query
from . import catalog
from .actionlog import Actor, record
from .declarations import QUEUE_NAME
from .health import PROBLEM_IDS
from .operations import check_by

logger = logging.getLogger(__name__)

#: The counts the queue overview shows per queue.
OVERVIEW_STATES = (
    JobState.READY,
    JobState.SCHEDULED,
    JobState.RUNNING,
    JobState.FAILED,
    JobState.DEAD,
)

#: Name -> ``users()``: ``(queue, who uses it)`` pairs of what a feature declares beside jobs.
queue_users: Registry[Callable[[], Iterable[tuple[str, str]]]] = Registry("queue user", origin=None)


def _alias() -> str:
    return settings.DATABASE


def _jobs() -> QuerySet[Job]:
    return Job.objects.using(_alias())


# Queue verbs -------------------------------------------------------------------------------


def check_queue(queue: str) -> str:
    """``queue`` if it is a queue name, else ``InvalidInput`` (``queue-invalid``)."""
    if not isinstance(queue, str) or not QUEUE_NAME.match(queue):
        raise InvalidInput(
            f"{queue!r} is not a queue name: use 1-100 letters, digits, or '_.:-' (the name "
            "in the job's @job(queue=...)).",
            code="queue-invalid",
        )
    return queue


def _pause_queue(queue: str, *, reason: str, by: str) -> QueueState:
    state = QueueState(
        name=queue, paused=True, reason=reason, changed_by=by, changed_at=clock.now()
    )
    QueueState.objects.using(_alias()).bulk_create(
        [state],
        update_conflicts=True,
        unique_fields=["name"],
        update_fields=["paused", "reason", "changed_by", "changed_at"],
    )
    return state


def pause(queue: str, *, reason: str, by: str, user_id: int | None = None) -> QueueState:
    """Stop workers claiming the queue's jobs until ``resume``; running jobs finish.

    A reason is required: the next operator reads it in the admin and in ``doctor``. The
    switch and its operator action log row are written in one transaction.
    """
    by = check_by(by)
    queue = check_queue(queue)
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidInput(
            f"Say why queue {queue!r} is paused: give a reason (--reason in the CLI, the "
            "reason field in the admin) so whoever finds it paused knows when to resume it.",
            code="reason-required",
        )
    with transaction.atomic(using=_alias()):
        state = _pause_queue(queue, reason=reason.strip(), by=by)
        record(
            OperatorVerb.PAUSE,
            Actor(by, user_id, state.reason),
            affected=1,
            filter={"queue": queue},
        )
    logger.info("queue paused queue=%s by=%s reason=%r", queue, by, state.reason)
    return state


def resume(
    queue: str, *, by: str, reason: str = "", user_id: int | None = None
) -> QueueState | None:
    """Let workers claim the queue's jobs again (its due jobs wake them at once). Answers the
    new switch, or ``None`` when the queue was not paused: then nothing is written (no
    operator action log row either)."""
    by = check_by(by)
    queue = check_queue(queue)
    state = QueueState(name=queue, paused=False, reason="", changed_by=by, changed_at=clock.now())
    with transaction.atomic(using=_alias()):
        resumed = (
            QueueState.objects.using(_alias())
            .filter(name=queue, paused=True)
            .update(paused=False, reason="", changed_by=by, changed_at=state.changed_at)
        )
        if not resumed:
            return None
        actor = Actor(by, user_id, reason)
        record(OperatorVerb.RESUME, actor, affected=1, filter={"queue": queue})
        # Workers sleeping on LISTEN learn of the due jobs at commit, not at their next poll.
        with connections[_alias()].cursor() as cursor:
            cursor.execute(
                "SELECT pg_notify(%s, %s)",
                [NOTIFY_CHANNEL, f"{queue} {state.changed_at.timestamp()}"],
            )
    logger.info("queue resumed queue=%s by=%s", queue, by)
    return state


# The overview ------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueSummary:
    """One queue on the overview: job counts per state, the oldest due job, its switch."""

    name: str
    counts: dict[str, int]
    due: int
    oldest_due_age: timedelta | None
    paused: bool = False
    reason: str = ""
    changed_by: str = ""
    changed_at: datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        """The summary as plain JSON values."""
        return {
            "name": self.name,
            "counts": self.counts,
            "due": self.due,
            "oldest_due_age_seconds": (
                self.oldest_due_age.total_seconds() if self.oldest_due_age is not None else None
            ),
            "paused": self.paused,
            "reason": self.reason,
            "changed_by": self.changed_by,
            "changed_at": self.changed_at.isoformat() if self.changed_at else None,
        }


def _counts(now: datetime) -> dict[str, dict[str, Any]]:
    """Per queue: the count of each live state and dead, the due jobs, the oldest due run_at."""
    by_queue: dict[str, dict[str, Any]] = {}
    with connections[_alias()].cursor() as cursor:
        run_query(cursor, "queue_counts", {"now": now})
        found = fetch_all(cursor)
    for part in found:
        row = by_queue.setdefault(part["queue"], {"due": 0, "oldest_due": None})
        row[part["state"]] = part["count"]
        row["due"] += part["due"]
        oldest = part["oldest_due"]
        if oldest is not None and (row["oldest_due"] is None or oldest < row["oldest_due"]):
            row["oldest_due"] = oldest
    return by_queue


def queue_overview(
    *, now: datetime | None = None, states: Sequence[JobState] = OVERVIEW_STATES
) -> list[QueueSummary]:
    """Every queue that has jobs, a switch or a declaration, by name, with its count of jobs
    in each of ``states`` (live states and ``dead``): two queries in all, neither reading the
    done or cancelled rows (``queue_counts`` reads the partial indexes)."""
    now = now or clock.now()
    by_queue = _counts(now)
    switches = {q.name: q for q in QueueState.objects.using(_alias()).all()}
    names = set(by_queue) | set(switches) | {d.queue for d in catalog.all_jobs()}
    summaries = []
    for name in sorted(names):
        row: dict[str, Any] = by_queue.get(name, {})
        switch = switches.get(name)
        oldest = row.get("oldest_due")
        summaries.append(
            QueueSummary(
                name=name,
                counts={state.value: row.get(state.value, 0) for state in states},
                due=row.get("due", 0),
                oldest_due_age=max(now - oldest, timedelta(0)) if oldest else None,
                paused=bool(switch and switch.paused),
                reason=switch.reason if switch else "",
                changed_by=switch.changed_by if switch else "",
                changed_at=switch.changed_at if switch else None,
            )
        )
    return summaries


# What uses a queue ------------------------------------------------------------------------


def declared_queues() -> dict[str, list[str]]:
    """Every job queue something declares, with what uses it: job declarations (schedules run
    their job's queue), then what features registered in ``queue_users``."""
    users: dict[str, list[str]] = {}
    for definition in catalog.all_jobs():
        users.setdefault(definition.queue, []).append(f"job {definition.name!r}")
    for source in queue_users.values():
        for queue, user in source():
            users.setdefault(queue, []).append(user)
    return users


def unused_queue(queue: str, where: str) -> str | None:
    """A warning (``queue-unused``) when no declaration uses ``queue``: a typo, most likely."""
    known = declared_queues()
    if queue in known:
        return None
    return (
        f"[queue-unused] {where} names queue {queue!r}, which no declaration uses (declared: "
        f"{', '.join(sorted(known))}).{did_you_mean(queue, known)}"
    )


# What doctor finds -------------------------------------------------------------------------


def problems(*, now: datetime, lease_now: datetime, max_ready_age: timedelta) -> list[Problem]:
    """What ``doctor`` reports about queues: due jobs waiting longer than ``max_ready_age``
    (``ready-backlog``) and due jobs no live worker serves (``no-worker``), each with the ids
    of its longest-waiting jobs; a paused queue is a note with its reason (an operator paused it
    on purpose, but a forgotten switch keeps work from running)."""
    found: list[Problem] = []
    switches = {q.name: q for q in QueueState.objects.using(_alias()).filter(paused=True)}
    due = _jobs().filter(state__in=CLAIMABLE, run_at__lte=now)
    due_by_queue = list(
        due.order_by()
        .values("queue")
        .annotate(due=Count("pk"), oldest=Min("run_at"))
        .order_by("queue")
    )
    live_workers = list(
        Worker.objects.using(_alias())
        .filter(lease_expires_at__gt=lease_now)
        .values_list("queues", flat=True)
    )
    serves_all = any(not queues for queues in live_workers)
    served = {queue for queues in live_workers for queue in (queues or [])}
    for row in due_by_queue:
        queue, count, age = row["queue"], row["due"], now - row["oldest"]
        switch = switches.get(queue)
        if switch is not None:
            found.append(_paused_note(switch, count, age))
            continue
        backlog = age > max_ready_age
        unserved = not serves_all and queue not in served
        if not (backlog or unserved):
            continue
        ids = tuple(
            due.filter(queue=queue)
            .order_by("run_at", "pk")
            .values_list("pk", flat=True)[:PROBLEM_IDS]
        )
        jobs = ngettext("%(n)d job is", "%(n)d jobs are", count) % {"n": count}
        if backlog:
            found.append(
                Problem(
                    "ready-backlog",
                    f"Queue {queue!r}: the oldest due job has waited {format_age(age)}, over "
                    f"the {format_age(max_ready_age)} threshold (--max-ready-age); {jobs} due. "
                    "Add workers or concurrency, or look for slow jobs holding the workers.",
                    where=queue,
                    count=count,
                    job_ids=ids,
                )
            )
        if unserved:
            found.append(
                Problem(
                    "no-worker",
                    f"Queue {queue!r}: {jobs} due and no live worker serves it. Start "
                    f"`manage.py runworker` (all queues) or `runworker --queues {queue}`.",
                    where=queue,
                    count=count,
                    job_ids=ids,
                )
            )
    return found


def _paused_note(switch: QueueState, count: int, age: timedelta) -> Problem:
    """A paused queue with due jobs: worth knowing (a forgotten switch keeps work waiting)."""
    jobs = ngettext("%(n)d due job waits", "%(n)d due jobs wait", count) % {"n": count}
    return note(
        "queue-paused",
        f"Queue {switch.name!r} is paused since {switch.changed_at.isoformat()} by "
        f"{switch.changed_by or 'unknown'} ({switch.reason or 'no reason given'}); {jobs}, the "
        f"oldest for {format_age(age)}. Resume it with `manage.py litejobs resume "
        f"{switch.name}`.",
        where=switch.name,
        count=count,
    )
