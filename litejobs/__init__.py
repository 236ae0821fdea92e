"""litejobs: durable background work for Django on PostgreSQL alone.

The user-facing surface; everything else is an implementation detail.
"""

from .batches import batch
from .core.retry import Retry
from .exceptions import Cancelled, LitejobsError, Permanent, RetryAfter, WaitTimedOut
from .ingest import Buffer, Files, Freshness, Pipeline, drop, enrich, pipeline
from .jobs.arguments import Concurrency
from .jobs.context import JobContext
from .jobs.declarations import JobDefinition, job
from .jobs.enqueue import Enqueued
from .jobs.events import event, publish_event
from .locks import HeldLock, LockLost, LockWaitTimeout, lock
from .rates import Rate
from .reports import Audit, Limits, Need, Paging, Report, report
from .scheduling.declarations import ScheduleDefinition, schedule
from .scheduling.identity import OccurrenceRef
from .scheduling.manual import ManualJob, manual

__version__ = "0.1.0"

__all__ = [
    "Audit",
    "Buffer",
    "Cancelled",
    "Concurrency",
    "Enqueued",
    "Files",
    "Freshness",
    "HeldLock",
    "JobContext",
    "JobDefinition",
    "Limits",
    "LitejobsError",
    "LockLost",
    "LockWaitTimeout",
    "ManualJob",
    "Need",
    "OccurrenceRef",
    "Paging",
    "Permanent",
    "Pipeline",
    "Rate",
    "Report",
    "Retry",
    "RetryAfter",
    "ScheduleDefinition",
    "WaitTimedOut",
    "batch",
    "drop",
    "enrich",
    "event",
    "job",
    "lock",
    "manual",
    "pipeline",
    "publish_event",
    "report",
    "schedule",
]
