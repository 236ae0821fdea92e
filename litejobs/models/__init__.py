"""litejobs records (Django models), grouped by concern."""

from .jobs import Job, JobAttempt, QueueState, Worker
from .schedules import (
    OCCURRENCE_FINISHED,
    Occurrence,
    OccurrenceReplay,
    OccurrenceState,
    Schedule,
    SchedulerLease,
    ScheduleStatus,
)
from .states import CLAIMABLE, LIVE, TERMINAL, JobState

__all__ = [
    "CLAIMABLE",
    "LIVE",
    "OCCURRENCE_FINISHED",
    "TERMINAL",
    "Job",
    "JobAttempt",
    "JobState",
    "Occurrence",
    "OccurrenceReplay",
    "OccurrenceState",
    "QueueState",
    "Schedule",
    "ScheduleStatus",
    "SchedulerLease",
    "Worker",
]
