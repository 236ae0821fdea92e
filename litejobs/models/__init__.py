"""litejobs records (Django models), grouped by concern."""

# ``Meta.triggers`` is django-pgtrigger's model option, which its app module adds to Django's.
# With "pgtrigger" missing from INSTALLED_APPS the models would not load at all ("'class Meta'
# got invalid attribute(s): triggers", on every command); importing it here lets them load, and
# the check litejobs.E040 names the fix.
import pgtrigger.apps  # noqa: F401 - before the models

from .bulk import (
    BULK_ITEM_JOB,
    UNFINISHED_BULK_ITEM,
    UNFINISHED_ITEM_CONSTRAINT,
    BulkAction,
    BulkActionItem,
    BulkConfirmationAttempt,
    BulkItemState,
)
from .jobs import Job, JobAttempt, QueueState, Worker
from .leases import LeaderLease, LeaderRole
from .outbox import OutboxMessage
from .schedules import (
    OCCURRENCE_FINISHED,
    Occurrence,
    OccurrenceReplay,
    OccurrenceState,
    Schedule,
    ScheduleStatus,
)
from .states import CLAIMABLE, LIVE, TERMINAL, JobState
from .steps import Event, JobStep, StepKind, StepState
from .webhooks import DeliveryState, WebhookDelivery, WebhookEndpoint
from .workqueues import FINISHED_ITEM, LIVE_ITEM, WorkItem, WorkItemState

__all__ = [
    "BULK_ITEM_JOB",
    "CLAIMABLE",
    "FINISHED_ITEM",
    "LIVE",
    "LIVE_ITEM",
    "OCCURRENCE_FINISHED",
    "TERMINAL",
    "UNFINISHED_BULK_ITEM",
    "UNFINISHED_ITEM_CONSTRAINT",
    "BulkAction",
    "BulkActionItem",
    "BulkConfirmationAttempt",
    "BulkItemState",
    "DeliveryState",
    "Event",
    "Job",
    "JobAttempt",
    "JobState",
    "JobStep",
    "LeaderLease",
    "LeaderRole",
    "Occurrence",
    "OccurrenceReplay",
    "OccurrenceState",
    "OutboxMessage",
    "QueueState",
    "Schedule",
    "ScheduleStatus",
    "StepKind",
    "StepState",
    "WebhookDelivery",
    "WebhookEndpoint",
    "WorkItem",
    "WorkItemState",
    "Worker",
]
