"""The operator's verbs on jobs: retry, cancel, promote, purge, and what ``doctor`` finds.

The admin and ``manage.py litejobs`` both call these functions and nothing else, so a job
moves the same way whichever surface an operator uses. Each job verb is one conditional
statement: it changes the row only when its state allows, and otherwise changes nothing and
raises ``TransitionRefused`` naming the state and what to do instead. A missing id raises
``JobNotFound``. Every verb logs who asked (``by``) as ``key=value`` pairs.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, connections, transaction
from django.db.models import QuerySet
from django.utils.translation import ngettext

from ..conf import settings
from ..core import clock
from ..core.diagnostics import Problem
from ..core.durations import format_duration
from ..core.enums import CLAIMABLE, LIVE, TERMINAL, JobAction, JobState, OperatorVerb
from ..core.payloads import REDACTED, Scrubber, blank_out, redact
from ..core.registry import Registry
from ..exceptions import InvalidInput, JobNotFound, LitejobsError, TransitionRefused
from ..models import Job
from ..sql import query
from ..sql.cursors import fetch_one
from . import catalog, holdups, minutes
from .actionlog import Actor, record
from .steps import HELD

logger = logging.getLogger(__name__)

#: States ``retry`` moves back to ready: finished for good, or waiting for a retry.
RETRYABLE = (*TERMINAL, JobState.FAILED)
#: States ``promote`` (run now) applies to: waiting for a time that has not come.
PROMOTABLE = (JobState.SCHEDULED, JobState.FAILED)
#: The unique index that keeps one live job per (name, tenant, key).
LIVE_KEY_CONSTRAINT = "litejobs_job_live_key"
#: How far back ``doctor`` looks for dead jobs.
DEAD_LOOKBACK = timedelta(days=1)
#: Job ids a problem lists (the count says how many there are).
PROBLEM_IDS = 10

#: Name -> ``guard(job_id, row, by)``: a ``TransitionRefused`` for a job ``retry`` must not
#: send back (``row`` holds its ``name``, ``payload`` and ``occurrence_id``), else None.
retry_guards: Registry[Callable[[int, Mapping[str, Any], str], TransitionRefused | None]] = (
    Registry("retry guard", origin=None)
)


@dataclass(frozen=True)
class ActionResult:
    """What a job verb did: ``action`` is retried, cancelled, cancel-requested or promoted."""

    job_id: int
    action: JobAction
    state: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        """The result as plain JSON values (the CLI's ``--json``)."""
        return {
            "job_id": self.job_id,
            "action": self.action,
            "state": self.state,
            "message": self.message,
        }


def _alias() -> str:
    return settings.DATABASE


def _shown(name: str) -> str:
    """A duration setting as messages show it (``20s``, ``1h``)."""
    return format_duration(settings.duration_or_default(name))


def _jobs() -> QuerySet[Job]:
    return Job.objects.using(_alias())


def check_by(by: str) -> str:
    """Who acts, as verbs record it; ``by-missing`` when nobody is named."""
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


def _logged(
    verb: OperatorVerb,
    job_id: int,
    change: Callable[[int, str], ActionResult],
    *,
    by: str,
    reason: str,
    user_id: int | None,
) -> ActionResult:
    """One operator verb on one job: ``change(job_id, by)`` and its operator action log row
    in one transaction. A refusal raised by ``change`` leaves neither the change nor a row."""
    actor = Actor(check_by(by), user_id, reason)
    with transaction.atomic(using=_alias()):
        outcome = change(job_id, actor.by)
        record(verb, actor, affected=1, job_ids=[job_id])
    return outcome


_RETRY_ADVICE: dict[str, str] = {
    JobState.READY: "it runs when a worker is free, so there is nothing to retry (check that its "
    "queue is not paused and a worker serves it: `manage.py litejobs doctor`).",
    JobState.SCHEDULED: "it has not run yet, so there is nothing to retry; use promote "
    "(run now) to run it at once.",
    JobState.RUNNING: "a worker is running it; wait for it to finish, or cancel it and then "
    "retry it.",
    JobState.WAITING: "it is paused in a durable sleep or event wait; it resumes by itself, or "
    "cancel it and then retry it.",
}


def retry(job_id: int, *, by: str, reason: str = "", user_id: int | None = None) -> ActionResult:
    """Send a finished (done, dead, cancelled) or failed job back to ``ready``, due now.

    Its attempts start again from 0 and the error on the row is cleared; the ``JobAttempt``
    history stays, its later rows numbered after the earlier ones. Refused (``key-live``)
    while another live job holds the same idempotency key: running both would do the same work
    twice. A feature whose jobs must be run again another
    way registers a guard in ``retry_guards`` that refuses them with the way to use: a job that
    runs a scheduled occurrence (replay the occurrence, audited), one that pays an item of a
    bulk money action (retry the item from its action). The retry is written to the operator
    action log (``reason``, ``user_id``: the Django user who acted, if any) in its transaction.
    """
    return _logged(OperatorVerb.RETRY, job_id, _retry_one, by=by, reason=reason, user_id=user_id)


def _retry_one(job_id: int, by: str) -> ActionResult:
    """``retry`` without the log row: the guards, then ``requeue``."""
    row = _jobs().filter(pk=job_id).values("occurrence_id", "name", "payload").first()
    if row is not None:
        for guard in retry_guards.values():
            refusal = guard(job_id, row, by)
            if refusal is not None:
                raise refusal
    return requeue(job_id, by=by)


def requeue(job_id: int, *, by: str) -> ActionResult:
    """``retry`` without its refusals of occurrence and bulk-item jobs: for the paths that
    checked more first (``litejobs.bulk.retry_item``). Operators use ``retry``."""
    by = check_by(by)
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
    return ActionResult(
        job_id, JobAction.RETRIED, JobState.READY, f"Job {job_id} is ready to run again."
    )


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


_CANCEL_ADVICE: dict[str, str] = {
    JobState.DONE: "it already finished, so there is nothing to cancel.",
    JobState.DEAD: "it already gave up, so there is nothing to cancel.",
    JobState.CANCELLED: "it is already cancelled.",
}


def cancel(job_id: int, *, by: str, reason: str = "", user_id: int | None = None) -> ActionResult:
    """Stop a live job: ready, scheduled, failed or waiting jobs become ``cancelled`` at once.

    A running job cannot be stopped from outside its worker: this sets ``cancel_requested``,
    the worker's next heartbeat fires the run's cancellation, and the job ends ``cancelled`` if
    its body stops (``ctx.check_cancelled()``). The answer says it was requested, not done. A
    running job whose lease lapsed (its worker is gone) is cancelled at once. Written to the
    operator action log in its transaction.
    """
    return _logged(OperatorVerb.CANCEL, job_id, _cancel_one, by=by, reason=reason, user_id=user_id)


def _cancel_one(job_id: int, by: str) -> ActionResult:
    """``cancel`` without the log row: one conditional statement."""
    now = clock.now()
    with transaction.atomic(using=_alias()), connections[_alias()].cursor() as cursor:
        params: dict[str, Any] = {"id": job_id, "now": now, "db_now": clock.lease_instant()}
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
        return ActionResult(
            job_id,
            JobAction.CANCEL_REQUESTED,
            state,
            f"Job {job_id} is running on worker {owner}: cancellation requested. The worker "
            f"fires it at its next heartbeat (within {_shown('HEARTBEAT')}); the job ends "
            "cancelled if its body stops, else it finishes.",
        )
    logger.info("job cancelled id=%s was=%s by=%s", job_id, was, by)
    return ActionResult(
        job_id, JobAction.CANCELLED, state, f"Job {job_id} is cancelled (it was {was})."
    )


def promote(job_id: int, *, by: str, reason: str = "", user_id: int | None = None) -> ActionResult:
    """Run a scheduled job, or a failed job's pending retry, now instead of at its ``run_at``
    (written to the operator action log in its transaction)."""
    return _logged(
        OperatorVerb.PROMOTE, job_id, _promote_one, by=by, reason=reason, user_id=user_id
    )


def _promote_one(job_id: int, by: str) -> ActionResult:
    """``promote`` without the log row: one conditional update."""
    changed = _jobs().filter(pk=job_id, state__in=PROMOTABLE).update(run_at=clock.now())
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
    return ActionResult(
        job_id, JobAction.PROMOTED, _current_state(job_id), f"Job {job_id} is due now."
    )


def delete(job_id: int, *, by: str, reason: str = "", user_id: int | None = None) -> ActionResult:
    """Delete a job that is not running, with its attempt history and steps.

    A running job is refused (``delete-refused``): its worker would go on with a row that is
    gone; cancel it first, and delete it once it stopped. So is an unfinished job a feature
    follows (a schedule's occurrence, a bulk money item: see ``_followed``). Written to the
    operator action log in its transaction (the log keeps the id after the row is gone).
    """
    return _logged(OperatorVerb.DELETE, job_id, _delete_one, by=by, reason=reason, user_id=user_id)


def _delete_one(job_id: int, by: str) -> ActionResult:
    """``delete`` without the log row: refused for a followed job, else one conditional
    delete (its attempts and steps cascade)."""
    if _followed(job_id, by):
        advice = (
            "a schedule's occurrence or a bulk money item follows it; cancel it first and "
            "delete it once it finished."
        )
        raise _refuse("delete", job_id, _current_state(job_id), advice, by=by)
    _, counts = _jobs().filter(pk=job_id).exclude(state=JobState.RUNNING).delete()
    if not counts.get(Job._meta.label, 0):
        advice = "a worker is running it; cancel it first and delete it once it stopped."
        raise _refuse("delete", job_id, _current_state(job_id), advice, by=by)
    logger.info("job deleted id=%s by=%s", job_id, by)
    return ActionResult(job_id, JobAction.DELETED, "deleted", f"Job {job_id} is deleted.")


def _followed(job_id: int, by: str) -> set[int]:
    """Of these live (unfinished) jobs, those a feature follows (a retry guard refuses them:
    a schedule's occurrence, a bulk money item): deleting one would leave its record waiting
    for a job that is gone, so they are cancelled first (their feature settles them)."""
    return _followed_of([job_id], by)


def _followed_of(ids: list[int], by: str) -> set[int]:
    rows = (
        _jobs()
        .filter(pk__in=ids)
        .exclude(state__in=TERMINAL)
        .values("pk", "occurrence_id", "name", "payload")
    )
    return {
        row["pk"]
        for row in rows
        if any(guard(row["pk"], row, by) is not None for guard in retry_guards.values())
    }


# Bulk over a filter ------------------------------------------------------------------------

#: Jobs one bulk call acts on when no limit is given, and the most it may be given.
BULK_DEFAULT = 100
BULK_MAX = 1000
#: The verbs ``bulk`` applies.
BULK_VERBS = (OperatorVerb.RETRY, OperatorVerb.CANCEL, OperatorVerb.PROMOTE, OperatorVerb.DELETE)
#: Matching jobs a preview reads, oldest first: it counts them (``10000+`` past it) and ``bulk``
#: checks that they are still the jobs that match.
PREVIEW_CAP = 10_000


@dataclass(frozen=True)
class JobFilter:
    """Which jobs a bulk action matches: every given field must hold (states: any of them)."""

    states: tuple[str, ...] = ()
    name: str = ""
    queue: str = ""
    tenant: str | None = None
    ids: tuple[int, ...] = ()

    @property
    def is_empty(self) -> bool:
        """No condition at all: it would match every job."""
        return not (self.states or self.name or self.queue or self.ids) and self.tenant is None

    def as_dict(self) -> dict[str, Any]:
        """The conditions given, as the action log keeps them."""
        given = {
            "state": list(self.states),
            "name": self.name,
            "queue": self.queue,
            "tenant": self.tenant,
            "ids": list(self.ids),
        }
        return {key: value for key, value in given.items() if value not in ("", [], None)}

    def apply(self, jobs: QuerySet[Job]) -> QuerySet[Job]:
        """``jobs`` narrowed to the matching ones."""
        if self.states:
            jobs = jobs.filter(state__in=self.states)
        if self.name:
            jobs = jobs.filter(name=self.name)
        if self.queue:
            jobs = jobs.filter(queue=self.queue)
        if self.tenant is not None:
            jobs = jobs.filter(tenant=self.tenant)
        if self.ids:
            jobs = jobs.filter(pk__in=self.ids)
        return jobs


@dataclass(frozen=True)
class BulkPreview:
    """The jobs a filter matches as an operator looks before acting: how many (``capped``: more
    than ``PREVIEW_CAP``) and ``seen``, a digest of which, that ``bulk`` compares before it acts."""

    count: int
    capped: bool
    seen: str


def preview(filter: JobFilter) -> BulkPreview:
    """What ``filter`` matches now (its oldest ``PREVIEW_CAP`` jobs, one read of their ids)."""
    ids = list(filter.apply(_jobs()).order_by("pk").values_list("pk", flat=True)[: PREVIEW_CAP + 1])
    digest = hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()
    return BulkPreview(min(len(ids), PREVIEW_CAP), len(ids) > PREVIEW_CAP, digest)


def _changed_since(filter: JobFilter, seen: str) -> InvalidInput | None:
    """``filter-changed`` when the jobs ``filter`` matches are not those a preview ``seen``."""
    now = preview(filter)
    if now.seen == seen:
        return None
    count = f"{now.count}+" if now.capped else str(now.count)
    return InvalidInput(
        f"The jobs matching the filter changed since you looked: it matches {count} now. "
        "Nothing was changed; check the new count and apply again.",
        code="filter-changed",
    )


def _actionable(verb: OperatorVerb, now: datetime) -> QuerySet[Job]:
    """The jobs ``verb`` would change, by the single verb's state rules; a job it already
    changed no longer matches (a promoted job is due, a running job's cancel is requested)."""
    if verb == OperatorVerb.RETRY:
        return _jobs().filter(state__in=RETRYABLE)
    if verb == OperatorVerb.CANCEL:
        return _jobs().filter(state__in=LIVE).exclude(state=JobState.RUNNING, cancel_requested=True)
    if verb == OperatorVerb.PROMOTE:
        return _jobs().filter(state__in=PROMOTABLE, run_at__gt=now)
    return _jobs().exclude(state=JobState.RUNNING)


def _each(verb: Callable[[int, str], ActionResult], ids: list[int], by: str) -> list[int]:
    """Apply a single verb to each id (each in its savepoint); answers the ids it changed.
    A refusal (a retry guard, a live key) leaves that job as it was."""
    changed = []
    for job_id in ids:
        try:
            with transaction.atomic(using=_alias()):
                verb(job_id, by)
        except LitejobsError:
            continue
        changed.append(job_id)
    return changed


def _apply_bulk(verb: OperatorVerb, ids: list[int], by: str, now: datetime) -> list[int]:
    """Change the locked ``ids`` (each one the verb may change: its lock keeps it so) and
    answer the ids changed: promote and delete in one statement each; retry and cancel
    through the single verb per job (their guards and the running job's cancel request)."""
    if verb == OperatorVerb.PROMOTE:
        _jobs().filter(pk__in=ids).update(run_at=now)
        return ids
    if verb == OperatorVerb.DELETE:
        kept = _followed_of(ids, by)
        deleting = [pk for pk in ids if pk not in kept]
        _jobs().filter(pk__in=deleting).delete()
        return deleting
    single = _retry_one if verb == OperatorVerb.RETRY else _cancel_one
    return _each(single, ids, by)


def check_limit(limit: int) -> int:
    """``limit`` when it is from 1 to ``BULK_MAX``, else ``InvalidInput`` (``limit-invalid``)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= BULK_MAX:
        raise InvalidInput(
            f"A bulk action changes 1 to {BULK_MAX} jobs per call; got {limit!r}. Run it again "
            "for the rest (it answers how many still match).",
            code="limit-invalid",
        )
    return limit


def bulk(
    verb: OperatorVerb,
    filter: JobFilter,
    *,
    limit: int = BULK_DEFAULT,
    by: str,
    reason: str = "",
    user_id: int | None = None,
    seen: str | None = None,
) -> dict[str, int]:
    """Apply ``verb`` (retry, cancel, promote, delete) to at most ``limit`` jobs matching
    ``filter`` that the verb may change, oldest first, in one transaction with its log row
    (which names the jobs it changed).

    Answers ``{"affected": n, "remaining": n}``: how many it changed, and how many matching
    jobs it may still change (call again until 0). Jobs another transaction holds are skipped,
    not waited for. A filter without any condition is refused (``filter-missing``): it would
    match every job. Given ``seen`` (a ``preview``'s), it acts only while the filter still
    matches the jobs that preview saw, else changes nothing (``filter-changed``).
    """
    actor = Actor(check_by(by), user_id, reason)
    if verb not in BULK_VERBS:
        raise InvalidInput(
            f"{verb!r} is not a bulk job action; use one of "
            f"{', '.join(str(v) for v in BULK_VERBS)}.",
            code="verb-invalid",
        )
    if filter.is_empty:
        raise InvalidInput(
            "A bulk action needs at least one condition (state, name, queue, tenant or ids): "
            "without one it would change every job.",
            code="filter-missing",
        )
    limit = check_limit(limit)
    now = clock.now()
    matching = filter.apply(_actionable(verb, now))
    with transaction.atomic(using=_alias()):
        ids = list(
            matching.order_by("pk")
            .select_for_update(skip_locked=True)
            .values_list("pk", flat=True)[:limit]
        )
        # Checked once the jobs to change are locked: none of them can leave the filter now.
        changed = _changed_since(filter, seen) if seen is not None else None
        if changed is not None:
            raise changed
        acted = _apply_bulk(verb, ids, actor.by, now) if ids else []
        affected = len(acted)
        record(
            verb,
            actor,
            affected=affected,
            job_ids=acted,
            filter={**filter.as_dict(), "limit": limit},
        )
        remaining = matching.count()
    logger.info(
        "jobs bulk %s affected=%s remaining=%s filter=%s by=%s",
        verb,
        affected,
        remaining,
        filter.as_dict(),
        actor.by,
    )
    return {"affected": affected, "remaining": remaining}


def bulk_summary(counts: Mapping[str, int]) -> str:
    """What a ``bulk`` call did, in words: ``1 job changed; 3 matching jobs remain (...)``."""
    affected, remaining = counts["affected"], counts["remaining"]
    changed = ngettext("%(n)d job changed", "%(n)d jobs changed", affected) % {"n": affected}
    if not remaining:
        return f"{changed}; no matching job remains."
    left = ngettext("%(n)d matching job remains", "%(n)d matching jobs remain", remaining) % {
        "n": remaining
    }
    return f"{changed}; {left} (run it again for the rest)."


# Retention ---------------------------------------------------------------------------------


def purge(
    *,
    now: datetime | None = None,
    by: str = "system",
    should_stop: Callable[[], bool] | None = None,
    reason: str = "",
) -> dict[str, int]:
    """Delete finished rows older than their state's retention; answers the count per state.

    Deletes ``PURGE_BATCH`` rows per statement (each its own transaction outside an atomic
    block) until none are left, so a purge of millions of rows never holds long locks; the
    rows' ``JobAttempt`` history goes with them. ``should_stop`` (the housekeeping job's
    cancellation) is asked between batches. The per-minute counters older than
    ``minutes.KEPT`` go too (one statement).
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
    shown = " ".join(f"{state}={n}" for state, n in counts.items())
    logger.info("jobs purged by=%s reason=%r %s", by, reason, shown)
    minutes.purge_minutes(now)
    return counts


# Reads the admin and the CLI share ---------------------------------------------------------


def state_label(state: str, run_at: datetime | None, now: datetime) -> str:
    """The state as an operator reads it: a scheduled or failed job whose time passed is due."""
    if state in PROMOTABLE and run_at is not None and run_at <= now:
        return "ready (due)" if state == JobState.SCHEDULED else "failed (retry due)"
    return str(state)


def _hidden(name: str, payload: Any) -> tuple[str, ...] | None:
    """The payload fields to hide wherever a job shows: its declaration's ``sensitive`` (and
    what an add-on adds); ``None`` for a job no installed app declares."""
    try:
        return catalog.sensitive_of(catalog.get(name), payload)
    except LitejobsError:
        return None


def safe_payload(name: str, payload: Any) -> Any:
    """The payload as it may be shown: the declaration's ``sensitive`` fields redacted.

    A row whose job no installed app declares shows every value redacted: nothing says which
    of its fields are safe.
    """
    sensitive = _hidden(name, payload)
    if sensitive is None:
        if isinstance(payload, dict):
            return dict.fromkeys(payload, REDACTED)
        return REDACTED
    return redact(payload, sensitive)


def safe_output(name: str, payload: Any, value: Any) -> Any:
    """A job's result or latest progress as it may be shown: the values of its payload's
    sensitive fields blanked out wherever they appear in it (a body may return or report
    them); for a job no installed app declares, every payload value."""
    sensitive = _hidden(name, payload)
    if sensitive is None:
        sensitive = tuple(payload) if isinstance(payload, dict) else ()
    return blank_out(value, Scrubber(payload, sensitive)) if sensitive else value


def _ids(queryset: QuerySet[Job]) -> tuple[int, ...]:
    return tuple(queryset.order_by("-pk").values_list("pk", flat=True)[:PROBLEM_IDS])


def _held_for_operator() -> list[Problem]:
    """``held-for-operator``: jobs whose ``once=True`` step's outcome is unknown, each waiting
    for ``resolve-step`` (the oldest first; nothing else will ever run them)."""
    held = _jobs().filter(state=JobState.WAITING, run_at__gte=HELD)
    count = held.count()
    if not count:
        return []
    ids = tuple(held.order_by("pk").values_list("pk", flat=True)[:PROBLEM_IDS])
    steps = holdups.unknown_steps(ids)
    commands = "; ".join(
        f"`{holdups.resolve_command(job_id, name)}`"
        for job_id in ids
        for name in steps.get(job_id, ())[:1]
    )
    return [
        Problem(
            "held-for-operator",
            ngettext(
                "%(n)d job is held for an operator",
                "%(n)d jobs are held for an operator",
                count,
            )
            % {"n": count}
            + ": a once=True step was started but its outcome was never recorded (its worker "
            "stopped mid-step), so it is not run again blindly. Check whether it took effect, "
            f"then say so: {commands}.",
            count=count,
            job_ids=ids,
        )
    ]


def problems(*, now: datetime, lease_now: datetime) -> list[Problem]:
    """What ``doctor`` reports about jobs: jobs held for an operator (``held-for-operator``),
    recent dead jobs (``dead-jobs``), running jobs whose lease lapsed (``lease-lapsed``,
    judged on the database's clock, as the workers judge it) and jobs waiting for a worker
    whose code can run them (``unknown-job``)."""
    problems: list[Problem] = _held_for_operator()
    dead = _jobs().filter(state=JobState.DEAD, finished_at__gte=now - DEAD_LOOKBACK)
    dead_count = dead.count()
    if dead_count:
        problems.append(
            Problem(
                "dead-jobs",
                ngettext("%(n)d job died", "%(n)d jobs died", dead_count)
                % {"n": dead_count}
                + " in the last day (attempts spent or a permanent error). Read their errors "
                "with `manage.py litejobs show ID`, fix the cause, then `manage.py litejobs "
                "retry ID`.",
                count=dead_count,
                job_ids=_ids(dead),
            )
        )

    lapsed = _jobs().filter(state=JobState.RUNNING, lease_expires_at__lt=lease_now)
    lapsed_count = lapsed.count()
    if lapsed_count:
        problems.append(
            Problem(
                "lease-lapsed",
                ngettext(
                    "%(n)d running job holds a lease that lapsed",
                    "%(n)d running jobs hold leases that lapsed",
                    lapsed_count,
                )
                % {"n": lapsed_count}
                + ": their worker stopped renewing (crashed, killed or cut off). A live worker "
                "reaps them at its next "
                "heartbeat and runs them again; if none does, start `manage.py runworker`.",
                count=lapsed_count,
                job_ids=_ids(lapsed),
            )
        )

    handed_back = _jobs().filter(state__in=CLAIMABLE, handed_back_at__isnull=False)
    handed_back_count = handed_back.count()
    if handed_back_count:
        names = sorted(set(handed_back.order_by().values_list("name", flat=True)[:PROBLEM_IDS]))
        problems.append(
            Problem(
                "unknown-job",
                ngettext("%(n)d job waits", "%(n)d jobs wait", handed_back_count)
                % {"n": handed_back_count}
                + " for a worker whose code can run them (their "
                f"name, or their payload version, is newer than the workers that claimed them: "
                f"{', '.join(names)}). Deploy the release that declares them to every worker; "
                f"each is dead-lettered UNKNOWN_JOB_GRACE ({_shown('UNKNOWN_JOB_GRACE')}) after "
                "it was first handed back.",
                count=handed_back_count,
                job_ids=_ids(handed_back),
            )
        )

    return problems
