"""Every closed set litejobs stores, logs or decides on, in one place.

Record states are Django ``TextChoices`` (the models' fields use their choices); sets that are
never stored are ``StrEnum``. Members are strings: they compare, hash and format as their
values, so a stored ``"failed"`` is ``JobState.FAILED``. This module imports nothing of
litejobs, so anything may use it before Django's app registry is ready (a job body's context,
a declaration at import).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from django.db import models

# Jobs --------------------------------------------------------------------------------------


class JobState(models.TextChoices):
    """Where a job is in its life. See README "Concepts" for the transitions."""

    SCHEDULED = "scheduled", "Scheduled"  # run_at was in the future when written
    READY = "ready", "Ready"
    RUNNING = "running", "Running"
    WAITING = "waiting", "Waiting"  # durable sleep or event wait
    FAILED = "failed", "Failed (retry pending)"
    DONE = "done", "Done"
    DEAD = "dead", "Dead"
    CANCELLED = "cancelled", "Cancelled"


#: A worker may claim these once ``run_at`` has passed (a waiting job: its sleep ended, its
#: event arrived, or its wait timed out).
CLAIMABLE = (JobState.READY, JobState.SCHEDULED, JobState.FAILED, JobState.WAITING)
#: A key is unique per (job name, tenant) among these.
LIVE = (*CLAIMABLE, JobState.RUNNING)
#: Nothing moves these but an explicit retry.
TERMINAL = (JobState.DONE, JobState.DEAD, JobState.CANCELLED)
#: The complement of CLAIMABLE. The claim and its index say "not one of these" rather than "one
#: of CLAIMABLE": a predicate the planner cannot prove for the live-key index, so after ANALYZE
#: of a table holding only finished jobs it still walks the claim index in order instead of
#: sorting the whole backlog on every claim.
UNCLAIMABLE = (JobState.RUNNING, *TERMINAL)


class UpstreamPolicy(models.TextChoices):
    """What a job waiting on others (``depends_on``) does when one of them did not succeed."""

    CANCEL = "cancel", "Cancel it (and what waits on it)"
    RUN = "run", "Run it anyway"
    SKIP = "skip", "Skip it (what waits on it goes on)"


class BatchState(models.TextChoices):
    """Where a batch of jobs is (``litejobs.batch``)."""

    OPEN = "open", "Open (children left)"
    COMPLETED = "completed", "Completed (its callback released)"


class AttemptOutcome(models.TextChoices):
    """How an attempt that did not succeed ended (a ``JobAttempt`` row)."""

    FAILED = "failed", "Failed"
    TIMEOUT = "timeout", "Timed out"
    LEASE_EXPIRED = "lease_expired", "Lease expired (worker lost)"
    CANCELLED = "cancelled", "Cancelled"


class MinuteOutcome(models.TextChoices):
    """How the jobs a per-minute counter (``JobMinute``) counts were settled."""

    DONE = "done", "Done"
    FAILED = "failed", "Failed (retry pending)"
    DEAD = "dead", "Dead"
    CANCELLED = "cancelled", "Cancelled"
    LAPSED = "lapsed", "Lease lapsed (worker lost)"


class SettleOutcome(StrEnum):
    """How a job ended, as its settle hook is told (``Settled.outcome``): the final states'
    words, plus ``dropped`` for a spent ``dead_letter=False`` job removed instead of kept."""

    DONE = "done"  # its body returned and the completion was written
    DEAD = "dead"  # failed for good (out of attempts, or not retryable), kept as dead
    CANCELLED = "cancelled"  # an operator cancelled it, before it ran or while it ran
    DROPPED = "dropped"  # failed for good and removed: its declaration keeps no dead letters


class CancelReason(StrEnum):
    """Why a run's cancellation fired (``ctx.cancel_reason``)."""

    TIMEOUT = "timeout"  # its attempt's timeout passed
    DRAIN = "drain"  # the worker stops (SIGTERM) and the drain timeout passed
    CANCEL = "cancel"  # an operator cancelled it
    LEASE_LOST = "lease_lost"  # another claim took it, or this worker could not renew it
    ABANDONED = "abandoned"  # it ignored its timeout's cancellation for TIMEOUT_GRACE


#: A run cancelled for one of these may not complete: its claim is no longer its own.
CLAIM_GONE = (CancelReason.LEASE_LOST, CancelReason.ABANDONED)


class RunOutcome(StrEnum):
    """How a worker's hold of a claimed job ended (the ``job end`` log line, its counts)."""

    DONE = "done"
    FAILED = "failed"  # a retry is due
    DEAD = "dead"
    CANCELLED = "cancelled"
    REFUSED = "refused"  # the fence was stale: another claim owns the job, nothing written
    RELEASED = "released"  # handed back uncounted (drain, outage, lease not renewed)
    HANDED_BACK = "handed_back"  # this code cannot run it (rolling deploys)
    WAITING = "waiting"  # a durable sleep or event wait
    HELD = "held"  # a once=True step's outcome is unknown: an operator decides
    UNACKNOWLEDGED = "unacknowledged"  # its batched completion was not written
    ERROR = "error"  # a bug of litejobs' own; the lease lapses and another worker retries


class JobAction(StrEnum):
    """What an operator's job verb did (``ActionResult.action``)."""

    RETRIED = "retried"
    CANCELLED = "cancelled"
    CANCEL_REQUESTED = "cancel-requested"  # it runs: its worker fires the cancellation
    PROMOTED = "promoted"
    DELETED = "deleted"


class OperatorVerb(models.TextChoices):
    """What an operator did, as the operator action log records it (``OperatorAction.verb``)."""

    RETRY = "retry", "Retry"
    CANCEL = "cancel", "Cancel"
    PROMOTE = "promote", "Run now"
    DELETE = "delete", "Delete"
    PAUSE = "pause", "Pause queue"
    RESUME = "resume", "Resume queue"
    SCHEDULE_DISABLE = "schedule-disable", "Disable schedule"
    SCHEDULE_ENABLE = "schedule-enable", "Enable schedule"
    SCHEDULE_REPLAY = "schedule-replay", "Replay occurrence"
    IMPORT_START = "import-start", "Start import"
    INGEST_REPLAY = "ingest-replay", "Replay set-aside records"
    REPORT_CANCEL = "report-cancel", "Cancel report run"
    REPORT_LIMITS = "report-limits", "Change report limits"
    ENDPOINT_DISABLE = "endpoint-disable", "Disable webhook endpoint"
    ENDPOINT_ENABLE = "endpoint-enable", "Enable webhook endpoint"


class StepState(models.TextChoices):
    """Where one step of a job is."""

    STARTED = "started", "Started (outcome not yet recorded)"  # once=True, before it runs
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed (runs again on the next attempt)"
    WAITING = "waiting", "Waiting (sleep or event)"
    TIMED_OUT = "timed_out", "Timed out waiting for its event"
    UNKNOWN = "unknown", "Outcome unknown (an operator must resolve it)"


class StepKind(models.TextChoices):
    """What a step does."""

    RUN = "run", "Run"
    SLEEP = "sleep", "Sleep"
    WAIT = "wait", "Wait for an event"
    COMPENSATE = "compensate", "Compensation"


class Backoff(StrEnum):
    """How a retry's delay grows with the failed attempts (``Retry.backoff``)."""

    EXPONENTIAL = "exponential"
    LINEAR = "linear"
    FIXED = "fixed"


class Jitter(StrEnum):
    """How a retry's delay is spread (``Retry.jitter``)."""

    EQUAL = "equal"  # at least half the delay
    FULL = "full"  # anywhere from zero
    NONE = "none"


class LeaderRole(models.TextChoices):
    """The roles that have a leader."""

    SCHEDULER = "scheduler", "Scheduler (plans occurrences)"
    RELAY = "relay", "Outbox relay (publishes staged messages)"


# Schedules ---------------------------------------------------------------------------------


class OccurrenceState(models.TextChoices):
    """Where an occurrence is; see README "Schedules" for the transitions."""

    SCHEDULED = "scheduled", "Scheduled"  # its job waits (due time, or a retry)
    PROCESSING = "processing", "Processing"  # a worker holds its job under a lease
    COMPLETED = "completed", "Completed"
    DEAD_LETTER = "dead_letter", "Dead letter"  # attempts spent or a permanent error
    SKIPPED = "skipped", "Skipped"  # never ran: missed (misfire policy), disabled, cancelled
    CANCELLED = "cancelled", "Cancelled"  # an operator cancelled it after it had started


#: Occurrences in these states are finished: retention may purge them, a replay may restart them.
OCCURRENCE_FINISHED = (
    OccurrenceState.COMPLETED,
    OccurrenceState.DEAD_LETTER,
    OccurrenceState.SKIPPED,
    OccurrenceState.CANCELLED,
)


class ScheduleStatus(models.TextChoices):
    """A schedule's lifecycle as declared: only ``active`` schedules are planned."""

    DRAFT = "draft", "Draft (awaiting a decision)"
    ACTIVE = "active", "Active"
    RETIRED = "retired", "Retired"


class Misfire(StrEnum):
    """What happens to instants missed while no scheduler ran (``schedule(misfire=...)``)."""

    SKIP = "skip"  # record them as skipped
    RUN_ONCE = "run_once"  # run the latest, skip the rest
    RUN_ALL = "run_all"  # run up to max_catchup of them, skip older ones


class Overlap(StrEnum):
    """Whether two occurrences of a schedule may run at once (``schedule(overlap=...)``)."""

    FORBID = "forbid"
    ALLOW = "allow"


class DstSkipped(StrEnum):
    """A local wall time the spring-forward skips (``schedule(dst_skipped=...)``)."""

    SHIFT = "shift"  # runs at the first valid instant after the gap
    SKIP = "skip"  # not run that day


class DstRepeated(StrEnum):
    """A local wall time the fall-back repeats (``schedule(dst_repeated=...)``)."""

    FIRST = "first"  # runs once, at the first
    BOTH = "both"  # runs at both


# The outbox and webhooks -------------------------------------------------------------------


class DeliveryState(models.TextChoices):
    """Where one delivery of one event to one endpoint is."""

    PENDING = "pending", "Pending"  # its job has not run yet
    FAILED = "failed", "Failed (retry pending)"
    DELIVERED = "delivered", "Delivered"
    DEAD = "dead", "Dead (gave up)"
    SKIPPED = "skipped", "Skipped (endpoint disabled or deleted)"


# Work queues and bulk money actions --------------------------------------------------------


class WorkItemState(models.TextChoices):
    """Where a work item is. ``claimed`` holds only while ``claim_expires_at`` is ahead."""

    OPEN = "open", "Open"
    CLAIMED = "claimed", "Claimed"
    DONE = "done", "Done"
    CANCELLED = "cancelled", "Cancelled"


#: Items still to be worked (a claimed item whose claim expired is among them, unclaimed).
LIVE_ITEM = (WorkItemState.OPEN, WorkItemState.CLAIMED)
#: Items that are finished for good: nothing changes them any more.
FINISHED_ITEM = (WorkItemState.DONE, WorkItemState.CANCELLED)


class ClaimMode(StrEnum):
    """Whether a work queue's items are claimed (``work_queue(claim=...)``)."""

    DISABLED = "disabled"  # no claims
    OPTIONAL = "optional"  # a claim is a visible hold others cannot act through
    REQUIRED = "required"  # nothing is done to an item without the acting user's live claim


class ItemAction(StrEnum):
    """What a person does to work items from a queue page's bulk actions."""

    CLAIM = "claim"
    RELEASE = "release"
    RESOLVE = "resolve"


class ItemView(StrEnum):
    """The listings of a work queue's page."""

    TODO = "todo"  # items to work (everyone's)
    UNCLAIMED = "unclaimed"
    MINE = "mine"
    OTHERS = "others"  # held by someone else
    CLOSED = "closed"


class ItemStatus(StrEnum):
    """How one user sees an item now."""

    OPEN = "open"
    MINE = "mine"
    THEIRS = "theirs"
    DONE = "done"
    CANCELLED = "cancelled"


class BulkItemState(models.TextChoices):
    """Where one item of a bulk money action is. ``succeeded`` is final: money moved once."""

    PENDING = "pending", "Pending"
    RETRYING = "retrying", "Failed, retrying"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"


#: Items whose job has not reached an outcome yet: the only states an item executes in.
UNFINISHED_BULK_ITEM = (BulkItemState.PENDING, BulkItemState.RETRYING)


class BulkStatus(StrEnum):
    """How a bulk money action stands as a whole."""

    EXECUTING = "executing"
    SUCCEEDED = "succeeded"  # every item
    FAILED = "failed"  # some items failed


# Ingest pipelines --------------------------------------------------------------------------


class Overflow(StrEnum):
    """What a pipeline's buffer does past its capacity (``Buffer(overflow=...)``)."""

    BLOCK = "block"  # feed() waits for room, then raises ingest-buffer-full
    DROP_OLDEST = "drop_oldest"  # the oldest buffered records are dropped with the declared reason
    PAGE = "page"  # the records are kept and an operator is paged


class IngestOutcome(models.TextChoices):
    """How a record left a pipeline: written by its sink, dropped with a reason, or errored."""

    ACCEPTED = "accepted", "Accepted"
    DROPPED = "dropped", "Dropped"
    ERRORED = "errored", "Errored"


class ImportState(models.TextChoices):
    """Where a file import is."""

    RUNNING = "running", "Running"
    DONE = "done", "Done"
    REFUSED = "refused", "Refused"  # its header or format was refused before any row was written


class FreshnessKind(StrEnum):
    """What a pipeline promises readers of its data (``Freshness.bounded`` / ``.advisory``)."""

    BOUNDED = "bounded"  # the data is at most this old while the pipeline is healthy
    ADVISORY = "advisory"  # another system is the authority; the data is a copy


# Reports ----------------------------------------------------------------------------------


class ReportState(models.TextChoices):
    """Where a report run is. Only ``done`` is ever offered for download."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    STOPPED = "stopped", "Stopped by a limit"  # max_rows, max_seconds or max_bytes; nothing offered
    FAILED = "failed", "Failed"  # its query or its storage failed; nothing offered
    CANCELLED = "cancelled", "Cancelled"
    EXPIRED = "expired", "Expired"  # past its lifetime; its output is removed


#: Runs that may still write output.
REPORT_LIVE = (ReportState.QUEUED, ReportState.RUNNING)
#: How a run ends (once: its audit trail records one of these per run; ``expired`` comes later,
#: to a ``done`` run's output).
REPORT_ENDINGS = (ReportState.DONE, ReportState.STOPPED, ReportState.FAILED, ReportState.CANCELLED)


class ReportFormat(StrEnum):
    """What a report writes: CSV (a header row, then a row per record) or NDJSON (a JSON
    object per line)."""

    CSV = "csv"
    NDJSON = "ndjson"


class PagingMode(StrEnum):
    """How an export reads its rows: a page at a time by primary key, or all at once."""

    PAGES = "pages"
    NONE = "none"


# Diagnostics -------------------------------------------------------------------------------


class Severity(StrEnum):
    """How much a ``Problem`` matters."""

    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"  # worth knowing, not wrong (a paused queue, a disabled schedule)


def values_of(enum: type[StrEnum]) -> tuple[str, ...]:
    """The values of an enum's members, in order: what a message lists as the choices."""
    return tuple(member.value for member in enum)


def sql_list(states: Iterable[StrEnum]) -> str:
    """``'a','b'`` for SQL written by hand (states are constants, never input)."""
    return ",".join(f"'{state.value}'" for state in states)
