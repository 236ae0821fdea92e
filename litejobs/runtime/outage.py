"""Database outages: recognise them, back off, and log them without flooding the log."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

import psycopg
from django.db import InterfaceError as DjangoInterfaceError
from django.db import OperationalError as DjangoOperationalError

from ..conf import settings

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper

logger = logging.getLogger(__name__)

# SQLSTATE classes of a lost or refused connection: 08 connection exception, 57P operator
# intervention (admin/crash shutdown, cannot connect now), 53 insufficient resources.
_OUTAGE_SQLSTATE_PREFIXES = ("08", "57P", "53")


def is_outage(error: BaseException | None) -> bool:
    """Whether ``error`` means the database is unreachable (not that the job did wrong)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, psycopg.errors.QueryCanceled):
            return False
        if isinstance(error, psycopg.InterfaceError | DjangoInterfaceError):
            return True
        if isinstance(error, psycopg.OperationalError):
            state = getattr(error, "sqlstate", None)
            return state is None or state.startswith(_OUTAGE_SQLSTATE_PREFIXES)
        if isinstance(error, DjangoOperationalError) and error.__cause__ is None:
            return True
        error = error.__cause__ or error.__context__
    return False


class Outage:
    """Shared by a worker's threads: one log line when the database goes, then at most one per
    ``OUTAGE_LOG_INTERVAL`` with a count, then one when it is back; capped exponential backoff."""

    def __init__(self, name: str = "worker") -> None:
        self.name = name
        self._lock = threading.Lock()
        self._failures = 0
        self._streak = threading.local()  # consecutive failures of the calling thread
        self._since: float | None = None
        self._last_log = 0.0
        self.recovered_at: float | None = None

    @property
    def active(self) -> bool:
        """Whether the database is currently considered unreachable."""
        return self._since is not None

    def failed(self, error: BaseException) -> float:
        """Record a failed database call; answers how long to wait before the next try."""
        with self._lock:
            now = time.monotonic()
            self._failures += 1
            interval = settings.duration("OUTAGE_LOG_INTERVAL").total_seconds()
            if self._since is None:
                self._since = now
                self._last_log = now
                logger.warning(
                    "database unavailable process=%s error=%s; retrying with backoff, no job is "
                    "failed because of it",
                    self.name,
                    one_line(error),
                )
            elif now - self._last_log >= interval:
                self._last_log = now
                logger.warning(
                    "database still unavailable process=%s for=%.0fs failures=%d error=%s",
                    self.name,
                    now - self._since,
                    self._failures,
                    one_line(error),
                )
        streak: int = getattr(self._streak, "count", 0) + 1
        self._streak.count = streak
        cap = settings.duration("OUTAGE_BACKOFF_MAX").total_seconds()
        return min(cap, 0.25 * 2.0 ** min(streak - 1, 20))

    def wait_out(
        self, error: BaseException, connection: BaseDatabaseWrapper, stop: threading.Event
    ) -> bool:
        """After a call on ``connection`` failed with the outage ``error``: close it (the next
        call opens a new one) and wait the backoff, or until ``stop`` is set; answers whether
        it was."""
        connection.close()
        return stop.wait(self.failed(error))

    def succeeded(self) -> None:
        """Record a successful database call; logs the recovery once."""
        self._streak.count = 0
        if self._since is None:
            return
        with self._lock:
            if self._since is None:
                return
            now = time.monotonic()
            logger.warning(
                "database recovered process=%s after=%.1fs failures=%d",
                self.name,
                now - self._since,
                self._failures,
            )
            self._since = None
            self._failures = 0
            self.recovered_at = now


def one_line(error: BaseException) -> str:
    """``OperationalError: connection failed: ...``: an error's class and first line."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"
