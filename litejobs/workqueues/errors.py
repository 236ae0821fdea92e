"""The refusals of human work queues, each with a stable ``code`` and a message naming the fix.

Each is a ``LitejobsError``; ``litejobs.workqueues`` exports them beside the API that raises
them.
"""

from ..core.errors import LitejobsError

__all__ = ["ClaimRefused", "WorkItemNotFound", "WorkQueueForbidden", "WorkQueueNotFound"]


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
