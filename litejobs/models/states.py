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


#: A worker may claim these once ``run_at`` has passed.
CLAIMABLE = (JobState.READY, JobState.SCHEDULED, JobState.FAILED)
#: A key is unique per (job name, tenant) among these.
LIVE = (*CLAIMABLE, JobState.RUNNING, JobState.WAITING)
#: Nothing moves these but an explicit retry.
TERMINAL = (JobState.DONE, JobState.DEAD, JobState.CANCELLED)


def sql_list(states) -> str:
    """``'a','b'`` for SQL written by hand (states are constants, never input)."""
    return ",".join(f"'{state.value}'" for state in states)
