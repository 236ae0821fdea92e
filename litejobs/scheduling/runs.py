"""Running an occurrence: its job enqueued through the one INSERT path, keyed by its identity.

Used by the leader when it plans an occurrence and by a manual replay, each inside the
transaction that writes the occurrence row, so the occurrence and its job commit together or
not at all.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from ..jobs.enqueue import Enqueued, PreparedRow, insert_one
from .declarations import ScheduleDefinition
from .identity import occurrence_key


def prepare(definition: ScheduleDefinition, scheduled_for: datetime) -> PreparedRow:
    """The job row of one occurrence: the schedule's static arguments, the occurrence identity
    as idempotency key, and under ``overlap="forbid"`` the schedule's concurrency key."""
    job = definition.run_definition
    row = job.prepare(dict(definition.args))
    return replace(
        row,
        key=occurrence_key(definition.name, scheduled_for),
        concurrency_key=definition.concurrency_key or row.concurrency_key,
    )


def enqueue(
    definition: ScheduleDefinition,
    row: PreparedRow,
    *,
    occurrence_id: int,
    now: datetime,
    run_at: datetime,
) -> Enqueued:
    """Insert the occurrence's job (joins the caller's transaction)."""
    job = definition.run_definition
    return insert_one(job, row, (now, run_at), job.priority, occurrence_id=occurrence_id)
