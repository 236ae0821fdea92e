"""The operator's verbs: retry, cancel, promote, pause, resume, purge, and what doctor checks.

The admin and ``manage.py litejobs`` both call these functions and nothing else, so a job
moves the same way whichever surface an operator uses (SPEC §2: one code path). Each job verb
is one conditional statement: it changes the row only when its state allows, and otherwise
changes nothing and raises ``TransitionRefused`` naming the state and what to do instead. A
missing id raises ``JobNotFound``. Every verb logs who asked (``by``) to the
``litejobs.operations`` logger as ``key=value`` pairs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, connections, transaction
from django.db.models import Count, Min, Q

from . import outbox, registry
from .conf import settings
from .core import clock
from .core.payloads import REDACTED, redact
from .exceptions import InvalidInput, JobNotFound, LitejobsError, TransitionRefused
from .jobs import _QUEUE_NAME
from .models import (
    BULK_ITEM_JOB,
    CLAIMABLE,
    LIVE,
    TERMINAL,
    Job,
    JobState,
    Occurrence,
    QueueState,
    Worker,
)
from .models.jobs import NOTIFY_CHANNEL
from .scheduling import operations as schedule_operations
from .sql import fetch_one, query

logger = logging.getLogger("litejobs.operations")

#: States ``retry`` moves back to ready: finished for good, or waiting for a retry.
RETRYABLE = (*TERMINAL, JobState.FAILED)
#: States ``promote`` (run now) applies to: waiting for a time that has not come.
PROMOTABLE = (JobState.SCHEDULED, JobState.FAILED)
#: The counts the queue overview shows per queue.
OVERVIEW_STATES = (
    JobState.READY,
    JobState.SCHEDULED,
    JobState.RUNNING,
    JobState.FAILED,
    JobState.DEAD,
)
#: The unique index that keeps one live job per (name, tenant, key).
LIVE_KEY_CONSTRAINT = "litejobs_job_live_key"
#: How far back ``doctor`` looks for dead jobs.
DEAD_LOOKBACK = timedelta(days=1)
#: Job ids a problem lists (the count says how many there are).
PROBLEM_IDS = 10


@dataclass(frozen=True)
class Outcome:
    """What a job verb did: ``action`` is retried, cancelled, cancel-requested or promoted."""

    job_id: int
    action: str
    state: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        """The outcome as plain JSON values (the CLI's ``--json``)."""
        return {
            "job_id": self.job_id,
            "action": self.action,
            "state": self.state,
            "message": self.message,
        }


def _alias() -> str:
    return settings.DATABASE


def _jobs():
    return Job.objects.using(_alias())


def _check_by(by: str) -> str:
    if not isinstance(by, str) or not by.strip():
        raise InvalidInput(
            "Say who acts: pass by= (the admin passes the user name, the CLI --by or the OS user).",
            code="by-missing",
        )
    return by.strip()[:150]


def _not_found(job_id: int) -> JobNotFound:
    return JobNotFound(
        f"No job has id {job_id}. It was never created or was purged after its retention; "
        "find jobs with `manage.py litejobs list` or the admin's job list."
    )


def get_job(job_id: int) -> Job:
    """The job with this id, for showing; ``JobNotFound`` when there is none."""
    job = _jobs().filter(pk=job_id).first()
    if job is None:
        raise _not_found(job_id)
    return job


def _current_state(job_id: int) -> str:
    """The state of a job the verb did not change; ``JobNotFound`` when there is no such id."""
    state = _jobs().filter(pk=job_id).values_list("state", flat=True).first()
    if state is None:
        raise _not_found(job_id)
    return state


def _refuse(verb: str, job_id: int, state: str, advice: str, *, by: str) -> TransitionRefused:
    logger.info("job %s refused id=%s state=%s by=%s", verb, job_id, state, by)
    return TransitionRefused(f"Job {job_id} is {state}; {advice}", code=f"{verb}-refused")


# Job verbs ---------------------------------------------------------------------------------

_RETRY_ADVICE = {
    JobState.READY: "it runs when a worker is free, so there is nothing to retry (check that its "
    "queue is not paused and a worker serves it: `manage.py litejobs doctor`).",
    JobState.SCHEDULED: "it has not run yet, so there is nothing to retry; use promote "
    "(run now) to run it at once.",
    JobState.RUNNING: "a worker is running it; wait for it to finish, or cancel it and then "
    "retry it.",
    JobState.WAITING: "it is paused in a durable sleep or event wait; it resumes by itself, or "
    "cancel it and then retry it.",
}


def retry(job_id: int, *, by: str) -> Outcome:
    """Send a finished (done, dead, cancelled) or failed job back to ``ready``, due now.

    Its attempts start again from 0 and the error on the row is cleared; the ``JobAttempt``
    history stays. Refused (``key-live``) while another live job holds the same idempotency key:
    running both would do the same work twice. A job that runs a scheduled occurrence is
    refused (``retry-refused``): replay the occurrence instead, which is audited. A job that
    executes an item of a bulk money action is refused (``bulk-retry-required``): that item is
    retried from its bulk action, which needs the action's permission and re-checks the item.
    """
    by = _check_by(by)
    row = _jobs().filter(pk=job_id).values("occurrence_id", "name", "payload").first()
    if row is not None and row["name"] == BULK_ITEM_JOB:
        bulk_action = (row["payload"] or {}).get("confirmation", "?")
        logger.info("job retry refused id=%s reason=bulk-item by=%s", job_id, by)
        raise TransitionRefused(
            f"Job {job_id} pays an item of bulk money action #{bulk_action}; a job retry may "
            "not move money. Retry the item from that bulk action's page in the admin (Bulk "
            "actions, 'Retry this item', or litejobs.bulk.retry_item), which needs the "
            "action's permission and checks the item is failed and unchanged.",
            code="bulk-retry-required",
        )
    occurrence_id = row["occurrence_id"] if row is not None else None
    if (
        occurrence_id is not None
        and Occurrence.objects.using(_alias()).filter(pk=occurrence_id).exists()
    ):
        logger.info("job retry refused id=%s reason=occurrence by=%s", job_id, by)
        raise TransitionRefused(
            f"Job {job_id} runs occurrence {occurrence_id} of a schedule; run it again with "
            f'`manage.py litejobs replay {occurrence_id} --reason "..."` (or the occurrence\'s '
            "replay action in the admin), which keeps the occurrence identity and records who "
            "replayed it and why.",
            code="retry-refused",
        )
    return requeue(job_id, by=by)


def requeue(job_id: int, *, by: str) -> Outcome:
    """``retry`` without its refusals of occurrence and bulk-item jobs: for the paths that
    checked more first (``litejobs.bulk.retry_item``). Operators use ``retry``."""
    by = _check_by(by)
    now = clock.now()
    try:
        with transaction.atomic(using=_alias()):
            changed = (
                _jobs()
                .filter(pk=job_id, state__in=RETRYABLE)
                .update(
                    state=JobState.READY,
                    run_at=now,
                    attempts=0,
                    started_at=None,
                    finished_at=None,
                    lease_owner="",
                    lease_expires_at=None,
                    cancel_requested=False,
                    result=None,
                    progress=None,
                    handed_back_at=None,
                    error_class="",
                    error_message="",
                    error_traceback="",
                )
            )
    except IntegrityError as error:
        if not _is_live_key_violation(error):
            raise
        raise _key_live(job_id, by=by) from error
    if not changed:
        state = _current_state(job_id)
        raise _refuse(
            "retry", job_id, state, _RETRY_ADVICE.get(state, "it cannot be retried."), by=by
        )
    logger.info("job retried id=%s by=%s", job_id, by)
    return Outcome(job_id, "retried", JobState.READY, f"Job {job_id} is ready to run again.")


def _is_live_key_violation(error: IntegrityError) -> bool:
    diag = getattr(error.__cause__, "diag", None)
    name = getattr(diag, "constraint_name", None)
    return name == LIVE_KEY_CONSTRAINT or (name is None and LIVE_KEY_CONSTRAINT in str(error))


def _key_live(job_id: int, *, by: str) -> TransitionRefused:
    row = _jobs().filter(pk=job_id).values("name", "tenant", "key").first()
    holder = None
    if row is not None:
        holder = (
            _jobs()
            .filter(state__in=LIVE, name=row["name"], tenant=row["tenant"], key=row["key"])
            .exclude(pk=job_id)
            .values_list("pk", "state")
            .first()
        )
    logger.info("job retry refused id=%s reason=key-live holder=%s by=%s", job_id, holder, by)
    named = f"job {holder[0]} ({holder[1]})" if holder else "another live job"
    # The key itself is not quoted: it is built from arguments that may be sensitive.
    return TransitionRefused(
        f"Job {job_id} cannot be retried: {named} already holds its idempotency key, and two "
        f"live jobs with one key would do the same work twice. Let {named} finish (or cancel "
        f"it), then retry job {job_id}.",
        code="key-live",
    )


_CANCEL_ADVICE = {
    JobState.DONE: "it already finished, so there is nothing to cancel.",
    JobState.DEAD: "it already gave up, so there is nothing to cancel.",
    JobState.CANCELLED: "it is already cancelled.",
}


def cancel(job_id: int, *, by: str) -> Outcome:
    """Stop a live job: ready, scheduled, failed or waiting jobs become ``cancelled`` at once.

    A running job cannot be stopped from outside its worker: this sets ``cancel_requested``,
    the worker's next heartbeat fires the run's cancellation, and the job ends ``cancelled`` if
    its body stops (``ctx.check_cancelled()``). The answer says it was requested, not done. A
    running job whose lease lapsed (its worker is gone) is cancelled at once.
    """
    by = _check_by(by)
    now = clock.now()
    with transaction.atomic(using=_alias()), connections[_alias()].cursor() as cursor:
        params = {"id": job_id, "now": now, "db_now": clock.lease_instant()}
        cursor.execute(query("cancel"), params)
        row = fetch_one(cursor)
    if row is None:
        state = _current_state(job_id)
        raise _refuse(
            "cancel", job_id, state, _CANCEL_ADVICE.get(state, "it cannot be cancelled."), by=by
        )
    state, was, owner = row["state"], row["was"], row["lease_owner"]
    if state == JobState.RUNNING:
        logger.info("job cancel requested id=%s worker=%s by=%s", job_id, owner, by)
        return Outcome(
            job_id,
            "cancel-requested",
            state,
            f"Job {job_id} is running on worker {owner}: cancellation requested. The worker "
            f"fires it at its next heartbeat (within {settings.HEARTBEAT}); the job ends "
            "cancelled if its body stops, else it finishes.",
        )
    logger.info("job cancelled id=%s was=%s by=%s", job_id, was, by)
    return Outcome(job_id, "cancelled", state, f"Job {job_id} is cancelled (it was {was}).")


def promote(job_id: int, *, by: str) -> Outcome:
    """Run a scheduled job, or a failed job's pending retry, now instead of at its ``run_at``."""
    by = _check_by(by)
    now = clock.now()
    changed = _jobs().filter(pk=job_id, state__in=PROMOTABLE).update(run_at=now)
    if not changed:
        state = _current_state(job_id)
        advice = (
            "it is already due and runs when a worker is free."
            if state == JobState.READY
            else "run now applies to scheduled jobs and failed jobs waiting for their retry"
            + ("; use retry to run it again." if state in TERMINAL else ".")
        )
        raise _refuse("promote", job_id, state, advice, by=by)
    logger.info("job promoted id=%s by=%s", job_id, by)
    return Outcome(job_id, "promoted", _current_state(job_id), f"Job {job_id} is due now.")


# Queue verbs -------------------------------------------------------------------------------


def _check_queue(queue: str) -> str:
    if not isinstance(queue, str) or not _QUEUE_NAME.match(queue):
        raise InvalidInput(
            f"{queue!r} is not a queue name: use 1-100 letters, digits, or '_.:-' (the name "
            "in the job's @job(queue=...)).",
            code="queue-invalid",
        )
    return queue


def _set_queue(queue: str, *, paused: bool, reason: str, by: str) -> QueueState:
    state = QueueState(
        name=queue, paused=paused, reason=reason, changed_by=by, changed_at=clock.now()
    )
    QueueState.objects.using(_alias()).bulk_create(
        [state],
        update_conflicts=True,
        unique_fields=["name"],
        update_fields=["paused", "reason", "changed_by", "changed_at"],
    )
    return state


def pause(queue: str, *, reason: str, by: str) -> QueueState:
    """Stop workers claiming the queue's jobs until ``resume``; running jobs finish.

    A reason is required: the next operator reads it in the admin and in ``doctor``.
    """
    by = _check_by(by)
    queue = _check_queue(queue)
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidInput(
            f"Say why queue {queue!r} is paused: give a reason (--reason in the CLI, the "
            "reason field in the admin) so whoever finds it paused knows when to resume it.",
            code="reason-required",
        )
    state = _set_queue(queue, paused=True, reason=reason.strip(), by=by)
    logger.info("queue paused queue=%s by=%s reason=%r", queue, by, state.reason)
    return state


def resume(queue: str, *, by: str) -> QueueState:
    """Let workers claim the queue's jobs again (its due jobs wake them at once)."""
    by = _check_by(by)
    queue = _check_queue(queue)
    with transaction.atomic(using=_alias()):
        state = _set_queue(queue, paused=False, reason="", by=by)
        # Workers sleeping on LISTEN learn of the due jobs at commit, not at their next poll.
        with connections[_alias()].cursor() as cursor:
            cursor.execute(
                "SELECT pg_notify(%s, %s)",
                [NOTIFY_CHANNEL, f"{queue} {state.changed_at.timestamp()}"],
            )
    logger.info("queue resumed queue=%s by=%s", queue, by)
    return state


# Retention ---------------------------------------------------------------------------------


def purge(
    *,
    now: datetime | None = None,
    by: str = "system",
    should_stop: Callable[[], bool] | None = None,
) -> dict[str, int]:
    """Delete finished rows older than their state's retention; answers the count per state.

    Deletes ``PURGE_BATCH`` rows per statement (each its own transaction outside an atomic
    block) until none are left, so a purge of millions of rows never holds long locks; the
    rows' ``JobAttempt`` history goes with them. ``should_stop`` (the housekeeping job's
    cancellation) is asked between batches.
    """
    now = now or clock.now()
    limit = int(settings.PURGE_BATCH)
    if limit < 1:
        raise InvalidInput(
            f"LITEJOBS['PURGE_BATCH'] must be 1 or more; got {limit}.", code="settings-invalid"
        )
    counts: dict[str, int] = {}
    for state in TERMINAL:
        before = now - settings.retention(state)
        deleted = 0
        while not (should_stop and should_stop()):
            with transaction.atomic(using=_alias()), connections[_alias()].cursor() as cursor:
                cursor.execute(query("purge"), {"state": state, "before": before, "limit": limit})
                batch = cursor.rowcount
            deleted += batch
            if batch < limit:
                break
        counts[str(state)] = deleted
    logger.info("jobs purged by=%s %s", by, " ".join(f"{state}={n}" for state, n in counts.items()))
    return counts


# Reads the admin and the CLI share ---------------------------------------------------------


def state_label(state: str, run_at: datetime | None, now: datetime) -> str:
    """The state as an operator reads it: a scheduled or failed job whose time passed is due."""
    if state in PROMOTABLE and run_at is not None and run_at <= now:
        return "ready (due)" if state == JobState.SCHEDULED else "failed (retry due)"
    return str(state)


def safe_payload(name: str, payload: Any) -> Any:
    """The payload as it may be shown: the declaration's ``sensitive`` fields redacted.

    A row whose job no installed app declares shows every value redacted: nothing says which
    of its fields are safe.
    """
    try:
        sensitive = registry.get(name).sensitive
    except LitejobsError:
        if isinstance(payload, dict):
            return dict.fromkeys(payload, REDACTED)
        return REDACTED
    return redact(payload, sensitive)


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


def queue_overview(*, now: datetime | None = None) -> list[QueueSummary]:
    """Every queue that has jobs, a switch or a declaration, by name: two queries in all."""
    now = now or clock.now()
    due = Q(state__in=CLAIMABLE, run_at__lte=now)
    rows = (
        _jobs()
        .filter(state__in=OVERVIEW_STATES)
        .order_by()
        .values("queue")
        .annotate(
            **{state.value: Count("pk", filter=Q(state=state)) for state in OVERVIEW_STATES},
            due=Count("pk", filter=due),
            oldest_due=Min("run_at", filter=due),
        )
    )
    by_queue = {row["queue"]: row for row in rows}
    switches = {q.name: q for q in QueueState.objects.using(_alias()).all()}
    names = set(by_queue) | set(switches) | {d.queue for d in registry.all_jobs()}
    summaries = []
    for name in sorted(names):
        row = by_queue.get(name, {})
        switch = switches.get(name)
        oldest = row.get("oldest_due")
        summaries.append(
            QueueSummary(
                name=name,
                counts={state.value: row.get(state.value, 0) for state in OVERVIEW_STATES},
                due=row.get("due", 0),
                oldest_due_age=max(now - oldest, timedelta(0)) if oldest else None,
                paused=bool(switch and switch.paused),
                reason=switch.reason if switch else "",
                changed_by=switch.changed_by if switch else "",
                changed_at=switch.changed_at if switch else None,
            )
        )
    return summaries


@dataclass(frozen=True)
class Problem:
    """Something ``doctor`` found wrong: a stable code, what it means and what to do."""

    code: str
    message: str
    count: int = 0
    job_ids: tuple[int, ...] = ()
    schedules: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The problem as plain JSON values."""
        return {
            "code": self.code,
            "message": self.message,
            "count": self.count,
            "job_ids": list(self.job_ids),
            "schedules": list(self.schedules),
        }


@dataclass(frozen=True)
class Diagnosis:
    """What ``doctor`` found: problems (unhealthy) and notes (worth knowing, not wrong)."""

    checked_at: datetime
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        """True when nothing needs an operator."""
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        """The diagnosis as plain JSON values."""
        return {
            "checked_at": self.checked_at.isoformat(),
            "healthy": self.healthy,
            "problems": [p.as_dict() for p in self.problems],
            "notes": self.notes,
        }


def _ids(queryset) -> tuple[int, ...]:
    return tuple(queryset.order_by("-pk").values_list("pk", flat=True)[:PROBLEM_IDS])


def format_age(delta: timedelta) -> str:
    """A duration as an operator reads it: ``45s``, ``12m 5s``, ``3h 20m``, ``2d 4h``."""
    seconds = max(int(delta.total_seconds()), 0)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")]
    first = next((i for i, (value, _) in enumerate(parts) if value), len(parts) - 1)
    shown = [f"{value}{unit}" for value, unit in parts[first : first + 2] if value]
    return " ".join(shown) or "0s"


def diagnose(*, max_ready_age: timedelta, now: datetime | None = None) -> Diagnosis:
    """Look for what needs an operator: recent dead jobs, lapsed leases, backlogs, no worker,
    jobs waiting for a worker whose code can run them (``unknown-job``), overdue schedules
    (``overdue-schedule``), active schedules no scheduler plans (``no-scheduler``), an outbox
    backlog older than ``max_ready_age`` (``outbox-backlog``) and webhook endpoints litejobs
    disabled after failures (``webhook-disabled``). Leases are judged on the database's clock,
    as the workers judge them.

    Paused queues and disabled schedules are not problems (an operator switched them off on
    purpose) but are noted with their reason, as a forgotten switch keeps work from running.
    """
    now = now or clock.now()
    lease_now = clock.database_now(_alias())
    problems: list[Problem] = []
    notes: list[str] = []

    dead = _jobs().filter(state=JobState.DEAD, finished_at__gte=now - DEAD_LOOKBACK)
    dead_count = dead.count()
    if dead_count:
        problems.append(
            Problem(
                "dead-jobs",
                f"{dead_count} job(s) died in the last day (attempts spent or a permanent "
                "error). Read their errors with `manage.py litejobs show ID`, fix the cause, "
                "then `manage.py litejobs retry ID`.",
                dead_count,
                _ids(dead),
            )
        )

    lapsed = _jobs().filter(state=JobState.RUNNING, lease_expires_at__lt=lease_now)
    lapsed_count = lapsed.count()
    if lapsed_count:
        problems.append(
            Problem(
                "lease-lapsed",
                f"{lapsed_count} running job(s) hold leases that lapsed: their worker stopped "
                "renewing (crashed, killed or cut off). A live worker reaps them at its next "
                "heartbeat and runs them again; if none does, start `manage.py runworker`.",
                lapsed_count,
                _ids(lapsed),
            )
        )

    handed_back = _jobs().filter(state__in=CLAIMABLE, handed_back_at__isnull=False)
    handed_back_count = handed_back.count()
    if handed_back_count:
        names = sorted(set(handed_back.order_by().values_list("name", flat=True)[:PROBLEM_IDS]))
        problems.append(
            Problem(
                "unknown-job",
                f"{handed_back_count} job(s) wait for a worker whose code can run them (their "
                f"name, or their payload version, is newer than the workers that claimed them: "
                f"{', '.join(names)}). Deploy the release that declares them to every worker; "
                f"each is dead-lettered UNKNOWN_JOB_GRACE ({settings.UNKNOWN_JOB_GRACE}) after "
                "it was first handed back.",
                handed_back_count,
                _ids(handed_back),
            )
        )

    switches = {q.name: q for q in QueueState.objects.using(_alias()).filter(paused=True)}
    due_by_queue = list(
        _jobs()
        .filter(state__in=CLAIMABLE, run_at__lte=now)
        .order_by()
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
            notes.append(
                f"Queue {queue!r} is paused since {switch.changed_at.isoformat()} by "
                f"{switch.changed_by or 'unknown'} ({switch.reason or 'no reason given'}); "
                f"{count} due job(s) wait, the oldest for {format_age(age)}. Resume it with "
                f"`manage.py litejobs resume {queue}`."
            )
            continue
        if age > max_ready_age:
            problems.append(
                Problem(
                    "ready-backlog",
                    f"Queue {queue!r}: the oldest due job has waited {format_age(age)}, over "
                    f"the {format_age(max_ready_age)} threshold (--max-ready-age); {count} "
                    "job(s) are due. Add workers or concurrency, or look for slow jobs "
                    "holding the workers.",
                    count,
                )
            )
        if not serves_all and queue not in served:
            problems.append(
                Problem(
                    "no-worker",
                    f"Queue {queue!r} has {count} due job(s) and no live worker serves it. "
                    f"Start `manage.py runworker` (all queues) or `runworker --queues {queue}`.",
                    count,
                )
            )
    schedule_problems, schedule_notes = schedule_operations.problems(now)
    for found in schedule_problems:
        problems.append(
            Problem(
                found["code"],
                found["message"],
                found["count"],
                schedules=tuple(found["schedules"]),
            )
        )
    notes.extend(schedule_notes)
    outbox_problems, outbox_notes = outbox.problems(now=now, max_age=max_ready_age)
    problems.extend(Problem(p["code"], p["message"], p["count"]) for p in outbox_problems)
    notes.extend(outbox_notes)
    return Diagnosis(now, problems, notes)
