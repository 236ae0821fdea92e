"""The operator's verbs on one job: retry, cancel, promote (run now) and delete.

The admin and ``manage.py litejobs`` both call these functions and nothing else, so a job
moves the same way whichever surface an operator uses. Each job verb is one conditional
statement: it changes the row only when its state allows, and otherwise changes nothing and
raises ``TransitionRefused`` naming the state and what to do instead. A missing id raises
``JobNotFound``. Every verb logs who asked (``by``) as ``key=value`` pairs.

The same verbs over a filter are ``filtered``; the purge of finished jobs ``retention``; what
``doctor`` finds ``health``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from django.db import IntegrityError, connections, transaction
from django.db.models import QuerySet

from ..conf import settings
from ..core import clock
from ..core.durations import format_duration
from ..core.enums import LIVE, TERMINAL, JobAction, JobState, OperatorVerb
from ..core.registry import Registry
from ..exceptions import InvalidInput, JobNotFound, TransitionRefused
from ..models import Job
from ..sql.cursors import fetch_one, run_query
from .actionlog import Actor, record

logger = logging.getLogger(__name__)

#: States ``retry`` moves back to ready: finished for good, or waiting for a retry.
RETRYABLE = (*TERMINAL, JobState.FAILED)
#: States ``promote`` (run now) applies to: waiting for a time that has not come.
PROMOTABLE = (JobState.SCHEDULED, JobState.FAILED)
#: The unique index that keeps one live job per (name, tenant, key).
LIVE_KEY_CONSTRAINT = "litejobs_job_live_key"

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
        return asdict(self)


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
    return _logged(OperatorVerb.RETRY, job_id, retry_one, by=by, reason=reason, user_id=user_id)


def retry_one(job_id: int, by: str) -> ActionResult:
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
    return _logged(OperatorVerb.CANCEL, job_id, cancel_one, by=by, reason=reason, user_id=user_id)


def cancel_one(job_id: int, by: str) -> ActionResult:
    """``cancel`` without the log row: one conditional statement."""
    now = clock.now()
    with transaction.atomic(using=_alias()), connections[_alias()].cursor() as cursor:
        params: dict[str, Any] = {"id": job_id, "now": now, "db_now": clock.lease_instant()}
        run_query(cursor, "cancel", params)
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
    follows (a schedule's occurrence, a bulk money item: see ``followed``). Written to the
    operator action log in its transaction (the log keeps the id after the row is gone).
    """
    return _logged(OperatorVerb.DELETE, job_id, _delete_one, by=by, reason=reason, user_id=user_id)


def _delete_one(job_id: int, by: str) -> ActionResult:
    """``delete`` without the log row: refused for a followed job, else one conditional
    delete (its attempts and steps cascade)."""
    if followed([job_id], by):
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


def followed(ids: list[int], by: str) -> set[int]:
    """Of these live (unfinished) jobs, those a feature follows (a retry guard refuses them:
    a schedule's occurrence, a bulk money item): deleting one would leave its record waiting
    for a job that is gone, so they are cancelled first (their feature settles them)."""
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
