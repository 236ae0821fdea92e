"""The worker's control connection: LISTEN for wake-ups, and the main loop's own statements.

A raw psycopg connection in autocommit, separate from the job threads' Django connections, so
a heartbeat never waits behind a job's transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import psycopg
from django.db import connections

from ..models.jobs import NOTIFY_CHANNEL

logger = logging.getLogger("litejobs.worker")


def connect(alias: str) -> psycopg.Connection:
    """A new autocommit psycopg connection with the settings of Django's ``alias``."""
    wrapper = connections[alias]
    params = wrapper.get_connection_params()
    params.pop("cursor_factory", None)
    params["autocommit"] = True
    params.setdefault("application_name", "litejobs")
    return psycopg.connect(**params)


class ControlConnection:
    """One psycopg connection: ``listen``, ``wait`` for notifications, run statements."""

    def __init__(self, alias: str) -> None:
        self.alias = alias
        self._conn: psycopg.Connection | None = None

    @property
    def connected(self) -> bool:
        return self._conn is not None and not self._conn.closed and not self._conn.broken

    def ensure(self) -> bool:
        """Connect and LISTEN if not connected; answers True when this call (re)connected."""
        if self.connected:
            return False
        self.close()
        conn = connect(self.alias)
        conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
        self._conn = conn
        return True

    @contextmanager
    def cursor(self) -> Iterator[psycopg.Cursor]:
        """A cursor on the control connection (connecting first if needed)."""
        self.ensure()
        with self._conn.cursor() as cur:
            yield cur

    def wait(self, timeout: float) -> list[tuple[str, datetime | None]]:
        """Block up to ``timeout`` seconds for notifications; answers (queue, run_at) pairs."""
        self.ensure()
        received = []
        for notify in self._conn.notifies(timeout=max(timeout, 0.0), stop_after=1):
            received.append(_parse(notify.payload))
        # Collect whatever else already arrived without waiting again.
        for notify in self._conn.notifies(timeout=0.0):
            received.append(_parse(notify.payload))
        return received

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except psycopg.Error:
                logger.debug("closing a broken control connection", exc_info=True)
            self._conn = None


def _parse(payload: str) -> tuple[str, datetime | None]:
    """``"<queue> <epoch>"`` (a job due at that instant) or ``"<queue>"`` (due now)."""
    queue, _, epoch = payload.rpartition(" ")
    if not queue:
        return payload, None
    try:
        return queue, datetime.fromtimestamp(float(epoch), tz=UTC)
    except ValueError:
        return payload, None
