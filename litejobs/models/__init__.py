"""litejobs records (Django models), grouped by concern."""

from .jobs import Job, JobAttempt, QueueState, Worker
from .states import CLAIMABLE, LIVE, TERMINAL, JobState

__all__ = ["CLAIMABLE", "LIVE", "TERMINAL", "Job", "JobAttempt", "JobState", "QueueState", "Worker"]
