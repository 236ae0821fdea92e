"""The job states and the groups the engine reasons about."""

from django.db import models


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
#: sorting the whole backlog on every claim (BENCH W9).
UNCLAIMABLE = (JobState.RUNNING, *TERMINAL)


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


def sql_list(states) -> str:
    """``'a','b'`` for SQL written by hand (states are constants, never input)."""
    return ",".join(f"'{state.value}'" for state in states)
