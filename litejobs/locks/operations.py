"""The locks as operators see them: the admin's page and ``manage.py litejobs locks`` read
them here, judged on the database's clock as the holders are."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..conf import settings
from ..core import clock
from ..core.clock import iso
from ..models import Lock

__all__ = ["LockView", "held_locks", "state_of"]


@dataclass(frozen=True)
class LockView:
    """One lock key: who holds (or last held) it, under which token, since and until when."""

    key: str
    token: int
    state: str
    host: str
    pid: int
    acquired_at: datetime
    renewed_at: datetime
    expires_at: datetime
    released_at: datetime | None
    contended: bool

    def as_dict(self) -> dict[str, Any]:
        """Its JSON form (``--json``)."""
        return {
            "key": self.key,
            "token": self.token,
            "state": self.state,
            "host": self.host,
            "pid": self.pid,
            "acquired_at": iso(self.acquired_at),
            "renewed_at": iso(self.renewed_at),
            "expires_at": iso(self.expires_at),
            "released_at": iso(self.released_at),
            "contended": self.contended,
        }


def state_of(row: Lock, now: datetime) -> str:
    """``held`` (not released, not lapsed at ``now``), ``released``, or ``lapsed`` (its
    holder stopped renewing it: it died, paused, or lost the database)."""
    if row.released_at is not None:
        return "released"
    return "held" if row.expires_at > now else "lapsed"


def held_locks(*, every: bool = False) -> list[LockView]:
    """The locks held now, oldest first; with ``every`` the released and lapsed keys too."""
    now = clock.database_now(settings.DATABASE)
    rows = Lock.objects.using(settings.DATABASE).order_by("acquired_at", "key")
    if not every:
        rows = rows.filter(released_at__isnull=True, expires_at__gt=now)
    return [
        LockView(
            key=row.key,
            token=row.token,
            state=state_of(row, now),
            host=row.host,
            pid=row.pid,
            acquired_at=row.acquired_at,
            renewed_at=row.renewed_at,
            expires_at=row.expires_at,
            released_at=row.released_at,
            contended=row.contended,
        )
        for row in rows
    ]
