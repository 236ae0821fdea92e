"""An occurrence's identity: (schedule, scheduled instant), and the job key derived from it.

The key is the idempotency scope of every job that runs the occurrence — the planned run, its
retries and any manual replay — so two of them are never live at once, and a body can use
``ctx.occurrence`` (or ``ctx.key``) to make side effects outside the database idempotent.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

KEY_PREFIX = "occurrence:"


def occurrence_key(schedule: str, instant: datetime) -> str:
    """``occurrence:<schedule>:<instant in UTC, ISO 8601>``: the same on every replica."""
    return f"{KEY_PREFIX}{schedule}:{instant.astimezone(UTC).isoformat()}"


@dataclass(frozen=True)
class OccurrenceRef:
    """What a job body learns about the occurrence it runs (``ctx.occurrence``)."""

    id: int
    schedule: str
    scheduled_for: datetime | None

    @property
    def key(self) -> str:
        """The occurrence identity as the job's idempotency key."""
        if self.scheduled_for is None:
            return f"{KEY_PREFIX}{self.schedule}"
        return occurrence_key(self.schedule, self.scheduled_for)

    @classmethod
    def from_key(cls, occurrence_id: int, key: str) -> OccurrenceRef:
        """Read the identity back from a claimed job's key (schedule names hold no colon)."""
        schedule, _, instant = key.removeprefix(KEY_PREFIX).partition(":")
        try:
            when = datetime.fromisoformat(instant) if instant else None
        except ValueError:
            when = None
        return cls(occurrence_id, schedule, when)

    def __str__(self) -> str:
        when = self.scheduled_for.isoformat() if self.scheduled_for else "?"
        return f"{self.schedule} @ {when} (occurrence {self.id})"
