"""Every refusal litejobs makes: one base class, a stable ``code`` and a message naming the fix.

Messages never echo a sensitive value. Configuration mistakes are also ``ImproperlyConfigured``;
bad input is also ``ValueError`` so callers can catch either the specific or the general kind.
"""

from django.core.exceptions import ImproperlyConfigured


class LitejobsError(Exception):
    """Base of every litejobs error; ``code`` is stable and documented in the README."""

    code = "litejobs-error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return f"[{self.code}] {self.args[0]}"


class DeclarationError(LitejobsError, ImproperlyConfigured):
    """A declaration (``@job``, settings) is invalid; fix the code or settings it names."""

    code = "declaration-invalid"


class InvalidInput(LitejobsError, ValueError):
    """An argument given at run time was refused before anything was written."""

    code = "input-invalid"


class UnknownJob(LitejobsError, LookupError):
    """A stored row names a job no installed app declares (renamed or removed code)."""

    code = "unknown-job"


class JobNotFound(LitejobsError, LookupError):
    """No job has that id."""

    code = "job-not-found"


class ScheduleNotFound(LitejobsError, LookupError):
    """No schedule has that name (in the database: a scheduler syncs declarations to rows)."""

    code = "schedule-not-found"


class OccurrenceNotFound(LitejobsError, LookupError):
    """No occurrence has that id."""

    code = "occurrence-not-found"


class GuardRefused(LitejobsError, PermissionError):
    """A manual job's guard (or its ``runs_where``) refused this run."""

    code = "manual-refused"


class StaleFence(LitejobsError):
    """A write presented a fencing value that is no longer current: another claim owns the job."""

    code = "stale-fence"


class TransitionRefused(LitejobsError):
    """An operator action does not apply to the job's current state."""

    code = "transition-refused"


class WorkQueueNotFound(LitejobsError, LookupError):
    """No installed app declares a work queue by that name (in its ``queues.py``)."""

    code = "work-queue-unknown"


class WorkItemNotFound(LitejobsError, LookupError):
    """No work item has that id in that queue (never enqueued there, or purged)."""

    code = "item-not-found"


class WorkQueueForbidden(LitejobsError, PermissionError):
    """The user lacks the permission the work queue declares; grant it to see and work it."""

    code = "work-queue-forbidden"


class ClaimRefused(LitejobsError):
    """An action on a work item that its queue's claim mode or another person's claim forbids.

    ``code`` says which: ``claim-held`` (someone else holds a live claim), ``claim-required``
    (the queue needs your live claim first), ``claim-not-held`` (a release of a claim you do not
    hold), ``claim-disabled`` (the queue has no claims), ``item-closed`` (already resolved or
    cancelled).
    """

    code = "claim-refused"


class Permanent(Exception):
    """Raise from a job body to stop retrying at once: the job goes to ``dead``."""


class Cancelled(Exception):
    """Raised by ``ctx.check_cancelled()`` once the run's cancellation has fired."""

    def __init__(self, reason: str = "cancelled") -> None:
        super().__init__(reason)
        self.reason = reason
