"""litejobs records (Django models), grouped by concern, and the states they take.

The states and every other closed set are defined in ``litejobs.core.enums`` (importable before
Django's app registry is ready); this package re-exports the ones its records store.
"""

# ``Meta.triggers`` is django-pgtrigger's model option, which its app module adds to Django's.
# With "pgtrigger" missing from INSTALLED_APPS the models would not load at all ("'class Meta'
# got invalid attribute(s): triggers", on every command); importing it here lets them load, and
# the check litejobs.E040 names the fix.
import pgtrigger.apps  # noqa: F401 - before the models

from ..core.enums import (
    CLAIMABLE,
    FINISHED_ITEM,
    LIVE,
    LIVE_ITEM,
    OCCURRENCE_FINISHED,
    TERMINAL,
    UNFINISHED_BULK_ITEM,
    AttemptOutcome,
    BulkItemState,
    DeliveryState,
    JobState,
    LeaderRole,
    MinuteOutcome,
    OccurrenceState,
    OperatorVerb,
    ScheduleStatus,
    StepKind,
    StepState,
    WorkItemState,
)
from .batches import Batch, JobDependency
from .bulk import (
    UNFINISHED_ITEM_CONSTRAINT,
    BulkAction,
    BulkActionItem,
    BulkConfirmationAttempt,
)
from .ingest import (
    BufferedRecord,
    ImportRefusal,
    ImportRun,
    IngestCount,
    IngestPosition,
    OverflowEvent,
    SetAsideRecord,
)
from .jobs import Job, JobAttempt, QueueState, Worker
from .leases import LeaderLease
from .locks import Lock, LockCounter
from .minutes import BUCKET_BOUNDS, JobMinute
from .operators import OperatorAction
from .outbox import OutboxMessage
from .rates import RateBucket
from .reports import ReportAudit, ReportLimits, ReportRun
from .schedules import Occurrence, OccurrenceReplay, Schedule
from .steps import Event, JobStep
from .webhooks import WebhookDelivery, WebhookEndpoint
from .workqueues import WorkItem

__all__ = [
    "BUCKET_BOUNDS",
    "CLAIMABLE",
    "FINISHED_ITEM",
    "LIVE",
    "LIVE_ITEM",
    "OCCURRENCE_FINISHED",
    "TERMINAL",
    "UNFINISHED_BULK_ITEM",
    "UNFINISHED_ITEM_CONSTRAINT",
    "AttemptOutcome",
    "Batch",
    "BufferedRecord",
    "BulkAction",
    "BulkActionItem",
    "BulkConfirmationAttempt",
    "BulkItemState",
    "DeliveryState",
    "Event",
    "ImportRefusal",
    "ImportRun",
    "IngestCount",
    "IngestPosition",
    "Job",
    "JobAttempt",
    "JobDependency",
    "JobMinute",
    "JobState",
    "JobStep",
    "LeaderLease",
    "LeaderRole",
    "Lock",
    "LockCounter",
    "MinuteOutcome",
    "Occurrence",
    "OccurrenceReplay",
    "OccurrenceState",
    "OperatorAction",
    "OperatorVerb",
    "OutboxMessage",
    "OverflowEvent",
    "QueueState",
    "RateBucket",
    "ReportAudit",
    "ReportLimits",
    "ReportRun",
    "Schedule",
    "ScheduleStatus",
    "SetAsideRecord",
    "StepKind",
    "StepState",
    "WebhookDelivery",
    "WebhookEndpoint",
    "WorkItem",
    "WorkItemState",
    "Worker",
]
