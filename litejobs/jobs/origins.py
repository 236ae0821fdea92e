"""What created a job, read from what each enqueue already writes (no extra column): a
schedule's occurrence (``Job.occurrence``), an outbox message (its subscriber's job is keyed
``outbox:<message id>`` and carries the message's id) or a bulk money action (its item's job
carries the action's id as ``confirmation``). The job page and ``litejobs show`` name it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ..models import Job
from ..models.jobs import BULK_ITEM_JOB
from .keys import subscriber_key


class OriginKind(StrEnum):
    """The records that create jobs; each value is also its key in ``litejobs show --json``."""

    OCCURRENCE = "occurrence"
    OUTBOX_MESSAGE = "outbox_message"
    BULK_ACTION = "bulk_action"

    @property
    def label(self) -> str:
        """How a page names it: ``outbox message``."""
        return self.value.replace("_", " ")


@dataclass(frozen=True)
class Origin:
    """The record that created a job: its kind and its id."""

    kind: OriginKind
    id: int

    def __str__(self) -> str:
        return f"{self.kind.label} {self.id}"


def _whole_number(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def origin_of(job: Job) -> Origin | None:
    """The occurrence, outbox message or bulk action that created ``job``; None when a caller
    enqueued it directly."""
    if job.occurrence_id is not None:
        return Origin(OriginKind.OCCURRENCE, job.occurrence_id)
    payload = job.payload if isinstance(job.payload, dict) else {}
    message_id = _whole_number(payload.get("message_id"))
    if message_id is not None and job.key == subscriber_key(message_id):
        return Origin(OriginKind.OUTBOX_MESSAGE, message_id)
    action_id = _whole_number(payload.get("confirmation"))
    if job.name == BULK_ITEM_JOB and action_id is not None:
        return Origin(OriginKind.BULK_ACTION, action_id)
    return None


def origin_ids(job: Job) -> dict[str, int | None]:
    """Each kind of origin -> the id of the one that created ``job`` (None for the others)."""
    origin = origin_of(job)
    return {
        kind.value: origin.id if origin is not None and origin.kind == kind else None
        for kind in OriginKind
    }
