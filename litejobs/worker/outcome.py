"""How a held job's run ends: the values a runner hands down, and the pure failure decision.

A runner decides what its run came to — completed, failed, to be released, refused, handed
back, waiting — as one of the values below, and hands it to the worker's ``Settler``, the one
place that writes it under the claim's fence, counts and logs it, and lets the job go.
``decide_failure`` is the decision an attempt that failed comes to (``failed`` with the next
attempt's time, ``dead``, ``cancelled``): a function of its inputs, reading no clock and no
database, so it is tested as a unit. ``failed`` builds the ``Failed`` value from it; it
writes nothing (undoing a dead job's completed steps is the settler's step).
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from datetime import datetime

from ..core import clock
from ..core.enums import AttemptOutcome, CancelReason, JobState
from ..core.payloads import Scrubber
from ..core.retry import Retry
from ..exceptions import Cancelled, RetryAfter, UnknownJob
from ..jobs import catalog
from ..jobs.claims import ClaimedJob
from ..jobs.steps import OperatorNeeded, Steps, Suspended

#: What a timed-out attempt records as its error class.
TIMEOUT_ERROR = "litejobs.Timeout"
#: How much of an error message and of a traceback an attempt records.
MESSAGE_LIMIT = 2000
TRACEBACK_LIMIT = 20000


@dataclass(frozen=True)
class Failure:
    """The decision about an attempt that failed."""

    #: ``failed`` (a retry is due at ``run_at``), ``dead`` or ``cancelled``.
    state: JobState
    #: What the attempt's history records: ``failed``, ``timeout`` or ``cancelled``.
    outcome: AttemptOutcome
    #: When the next attempt is due (``failed`` only).
    run_at: datetime | None
    error_class: str
    #: A spent job of a ``dead_letter=False`` declaration: removed instead of kept dead.
    discard: bool
    #: When it failed (its finish time, and what ``run_at`` counts from).
    at: datetime


def decide_failure(
    error: BaseException,
    *,
    attempt: int,
    max_attempts: int,
    job_id: int,
    now: datetime,
    retry: Retry | None,
    cancel_reason: CancelReason | str | None = None,
    dead_letter: bool = True,
) -> Failure:
    """What attempt ``attempt`` of ``max_attempts`` comes to after ``error``.

    Cancelled by an operator (``cancel_reason`` ``cancel`` and ``Cancelled`` raised):
    ``cancelled``. Otherwise ``dead`` when the attempts are spent, the policy gives up on the
    error (``Permanent``, ``give_up_on``) or there is no policy (``retry=None``: the job cannot
    be run here any more); else ``failed``, due after ``RetryAfter``'s delay or the policy's
    backoff (jittered from the job id, so the same inputs give the same instant). A timed-out
    attempt records ``timeout`` and the error class ``litejobs.Timeout``.
    """
    timed_out = cancel_reason == CancelReason.TIMEOUT
    run_at = None
    if cancel_reason == CancelReason.CANCEL and isinstance(error, Cancelled):
        state, outcome = JobState.CANCELLED, AttemptOutcome.CANCELLED
    else:
        outcome = AttemptOutcome.TIMEOUT if timed_out else AttemptOutcome.FAILED
        if retry is None or attempt >= max_attempts or retry.gives_up_on(error):
            state = JobState.DEAD
        elif isinstance(error, RetryAfter):  # the body knows when to try again
            state, run_at = JobState.FAILED, now + error.delay
        else:
            state, run_at = JobState.FAILED, now + retry.delay(attempt, seed=str(job_id))
    error_class = (
        TIMEOUT_ERROR if timed_out else f"{type(error).__module__}.{type(error).__qualname__}"
    )
    discard = state == JobState.DEAD and not dead_letter
    return Failure(state, outcome, run_at, error_class, discard, at=now)


# What a runner hands down --------------------------------------------------------------------


@dataclass(frozen=True)
class Completed:
    """An atomic job's completion, written in the transaction of its body."""


@dataclass(frozen=True)
class Unfenced:
    """An ``atomic=False`` job's completion: it joins the next batched acknowledgement."""

    result_json: str | None


@dataclass(frozen=True)
class Release:
    """Hand the job back uncounted once the database takes the write (a drain, a lease this
    worker could not renew, a database outage: ``error``, counted as one)."""

    why: str
    error: BaseException | None = None


@dataclass(frozen=True)
class Refused:
    """The run's claim is gone (another claim took the job): nothing is written for it."""

    #: Why, when a line should say so (``stale-fence``, ``lease_lost``, ``abandoned``).
    reason: str = ""


@dataclass(frozen=True)
class Failed:
    """A failed attempt: the decision, the texts it records, and what blanks the job's
    sensitive values out of them (the settler scrubs the message as a whole, after what it
    adds to it, then cuts it to ``MESSAGE_LIMIT``)."""

    failure: Failure
    message: str
    #: Already scrubbed and cut to ``TRACEBACK_LIMIT``.
    traceback: str
    scrub: Scrubber
    #: The run's steps: when the attempt is ``dead``, the settler undoes the completed ones.
    steps: Steps | None = None


@dataclass(frozen=True)
class HandBack:
    """This worker's code cannot run the job (a newer release enqueued it)."""

    error: UnknownJob


@dataclass(frozen=True)
class Pause:
    """The body sleeps, waits for an event, or waits for an operator."""

    signal: Suspended | OperatorNeeded


@dataclass(frozen=True)
class Crashed:
    """A bug of litejobs' own stopped the run: the job is let go, its lease lapses and
    another worker runs it again."""


Ending = Completed | Unfenced | Release | Refused | Failed | HandBack | Pause | Crashed


def failed(
    job: ClaimedJob,
    definition: catalog.Definition | None,
    error: BaseException,
    *,
    cancel_reason: CancelReason | str | None = None,
    steps: Steps | None = None,
) -> Failed:
    """The ``Failed`` ending of an attempt that raised ``error``: the decision (without a
    definition, the job cannot run here any more: dead) and its texts, scrubbed of the job's
    sensitive values (the traceback at once, the message once the settler completed it).
    ``steps`` go with it, for the settler to compensate should it be dead."""
    failure = decide_failure(
        error,
        attempt=job.attempt,
        max_attempts=job.max_attempts,
        job_id=job.id,
        now=clock.now(),
        retry=definition.retry if definition is not None else None,
        cancel_reason=cancel_reason,
        dead_letter=definition.dead_letter if definition is not None else True,
    )
    scrub = scrubber_for(job, definition)
    return Failed(
        failure,
        str(error),
        scrub("".join(traceback.format_exception(error)))[-TRACEBACK_LIMIT:],
        scrub,
        steps,
    )


def scrubber_for(job: ClaimedJob, definition: catalog.Definition | None = None) -> Scrubber:
    """What blanks the job's sensitive values out of its error texts and log lines. A job no
    installed app declares could hold anything: all its payload values are blanked."""
    if definition is None:
        try:
            definition = catalog.get(job.name)
        except UnknownJob:
            return Scrubber(job.payload, job.payload if isinstance(job.payload, dict) else ())
    return Scrubber(job.payload, catalog.sensitive_of(definition, job.payload))
