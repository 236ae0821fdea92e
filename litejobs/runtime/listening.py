"""A runtime's LISTEN connection: wake-ups, and the main loop's own statements.

A raw psycopg connection in autocommit, separate from the Django connections that run jobs
and batches, so a heartbeat never waits behind a job's transaction and a wake-up is never
queued behind one. The worker listens on the jobs channel (and runs its heartbeats, releases
and progress writes here); the relay listens on the outbox channel.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import psycopg
from django.db import connections

from ..sql.cursors import allow_prepared

logger = logging.getLogger(__name__)


def connect(alias: str) -> psycopg.Connection:
    """A new autocommit psycopg connection with the settings of Django's ``alias``."""
    wrapper = connections[alias]
    params = wrapper.get_connection_params()
    params.pop("cursor_factory", None)
    params["autocommit"] = True
    params.setdefault("application_name", "litejobs")
    conn = psycopg.connect(**params)
    allow_prepared(conn)
    return conn


class Listener:
    """One psycopg connection LISTENing on ``channel``: ``wait`` for notifications, run
    statements on ``cursor``."""

    def __init__(self, alias: str, channel: str) -> None:
        self.alias = alias
        self.channel = channel
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
        conn.execute(f"LISTEN {self.channel}")
        self._conn = conn
        return True

    def _ensured(self) -> psycopg.Connection[Any]:
        """The connection, connecting first if needed."""
        self.ensure()
        return cast("psycopg.Connection[Any]", self._conn)  # ensure() connected it

    @contextmanager
    def cursor(self) -> Iterator[psycopg.Cursor]:
        """A cursor on the connection (connecting first if needed)."""
        with self._ensured().cursor() as cur:
            yield cur

    def wait(self, timeout: float) -> list[str]:
        """Block up to ``timeout`` seconds for notifications; answers their payloads."""
        conn = self._ensured()
        received = [
            notify.payload for notify in conn.notifies(timeout=max(timeout, 0.0), stop_after=1)
        ]
        # Collect whatever else already arrived without waiting again.
        received += [notify.payload for notify in conn.notifies(timeout=0.0)]
        return received

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except psycopg.Error:
                logger.debug("closing a broken %s listen connection", self.channel, exc_info=True)
            self._conn = None
