"""Every refusal litejobs makes: one base class, a stable ``code`` and a message naming the fix.

The base errors (``LitejobsError``, ``DeclarationError``, ``InvalidInput``, ``Permanent``,
``ExtraMissing``) are defined in ``litejobs.core.errors``, below duration parsing, and
published here. Messages never echo a sensitive
value. Configuration mistakes are also ``ImproperlyConfigured``; bad input is also
``ValueError`` so callers can catch either kind.
"""

from django.core.exceptions import ImproperlyConfigured

from .core.durations import format_duration, parse_duration
from .core.errors import (
    DeclarationError,
    ExtraMissing,
    InvalidInput,
    LitejobsError,
    Permanent,
)


class DatabaseUnsupported(LitejobsError, ImproperlyConfigured):
    """The litejobs database (``LITEJOBS["DATABASE"]``) is not PostgreSQL, the only store
    litejobs runs on (``manage.py check`` reports it as litejobs.E001)."""

    code = "postgresql-required"


class MigrationsUnapplied(LitejobsError, ImproperlyConfigured):
    """litejobs' tables are not in the database yet: run ``manage.py migrate``."""

    code = "migrations-unapplied"


class DatabaseUnreachable(LitejobsError, ConnectionError):
    """The litejobs database does not accept the connection (stopped, unreachable, or refusing
    this user or database name): start it, or fix ``DATABASES``."""

    code = "database-unreachable"


class ResultNotJson(LitejobsError, TypeError):
    """A job body returned a value JSON cannot hold (a set, a date, an object): the attempt
    fails. Return plain JSON values, or nothing."""

    code = "result-not-json"


class UnknownJob(LitejobsError, LookupError):
    """A stored row names a job no installed app declares (renamed or removed code)."""

    code = "unknown-job"


class PayloadTooNew(UnknownJob):
    """A stored payload has a schema version newer than this code declares (a newer release
    enqueued it): a worker running that release must take it."""

    code = "payload-too-new"


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


class StepUsageError(InvalidInput, Permanent):
    """A durable step was used in a way that can never work (``step-invalid``, or the specific
    code of the misuse); the job stops without retrying."""

    code = "step-invalid"


class TransitionRefused(LitejobsError):
    """An operator action does not apply to the job's current state."""

    code = "transition-refused"


class WaitTimedOut(Exception):
    """``ctx.step.wait_for_event`` timed out without a matching event; catch it to go on."""


class Cancelled(Exception):
    """Raised by ``ctx.check_cancelled()`` once the run's cancellation has fired."""

    def __init__(self, reason: str = "cancelled") -> None:
        super().__init__(reason)
        self.reason = reason


class RetryAfter(Exception):
    """Raise from a job body to retry at a time you know (a server's ``Retry-After``).

    The next attempt is due ``delay`` after the failure instead of after the retry policy's
    backoff; the attempt still counts, so a job whose attempts are spent goes to ``dead``.
    ``delay`` is a duration: a ``timedelta``, seconds, or a string like ``"2m"``.
    """

    def __init__(self, delay: object, message: str = "") -> None:
        self.delay = parse_duration(delay, name="RetryAfter delay")
        super().__init__(message or f"retry after {format_duration(self.delay)}")


class WebhookError(LitejobsError, ValueError):
    """A webhook endpoint or delivery was refused; ``code`` says why and ``field`` (when set)
    names the endpoint field to fix: ``webhook-url-invalid``, ``webhook-address-refused``,
    ``webhook-host-unresolved``, ``webhook-topics-invalid``, ``webhook-secret-invalid``,
    ``webhook-tenant-invalid``, ``webhook-delivery-failed``."""

    code = "webhook-error"

    def __init__(self, message: str, *, code: str | None = None, field: str | None = None):
        super().__init__(message, code=code)
        self.field = field


class WebhookEndpointNotFound(LitejobsError, LookupError):
    """No webhook endpoint has that id (never created, or deleted)."""

    code = "webhook-endpoint-not-found"


class SignatureInvalid(LitejobsError, ValueError):
    """A received webhook's signature does not verify: ``webhook-signature-missing``,
    ``webhook-signature-malformed``, ``webhook-signature-mismatch`` (wrong secret, or an altered
    body, delivery id or topic) or ``webhook-signature-expired`` (outside the tolerance: a
    replay, or clock skew).
    Answer such a request with 400 and do not act on it."""

    code = "webhook-signature-invalid"


__all__ = [
    "Cancelled",
    "DatabaseUnreachable",
    "DatabaseUnsupported",
    "DeclarationError",
    "ExtraMissing",
    "GuardRefused",
    "InvalidInput",
    "JobNotFound",
    "LitejobsError",
    "MigrationsUnapplied",
    "OccurrenceNotFound",
    "PayloadTooNew",
    "Permanent",
    "ResultNotJson",
    "RetryAfter",
    "ScheduleNotFound",
    "SignatureInvalid",
    "StaleFence",
    "StepUsageError",
    "TransitionRefused",
    "UnknownJob",
    "WaitTimedOut",
    "WebhookEndpointNotFound",
    "WebhookError",
]
