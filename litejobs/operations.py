"""Moved to ``litejobs.jobs.operations`` (job verbs and retention), ``litejobs.jobs.queues``
(pause, resume, the queue overview) and ``litejobs.doctor``; this path keeps working."""

from .core.durations import format_age
from .doctor import Diagnosis, diagnose
from .jobs.operations import (
    ActionResult,
    cancel,
    get_job,
    promote,
    purge,
    requeue,
    retry,
    safe_payload,
    state_label,
)
from .jobs.queues import QueueSummary, pause, queue_overview, resume

__all__ = [
    "ActionResult",
    "Diagnosis",
    "QueueSummary",
    "cancel",
    "diagnose",
    "format_age",
    "get_job",
    "pause",
    "promote",
    "purge",
    "queue_overview",
    "requeue",
    "resume",
    "retry",
    "safe_payload",
    "state_label",
]
