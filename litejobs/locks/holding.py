"""A held lock: its token, its renewal while the block runs, and its release.

The hold is renewed by a daemon thread every third of the ttl, on the lock's own connection;
the expiry is pushed on the database's clock. The holder counts its hold from the instant a
statement that took or renewed it was sent, so it believes itself the holder no longer than
the database does. A renewal answering nothing (the lock was released, lapsed or taken over),
or no renewal landing before the hold ran out, makes the lock lost.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta
from typing import Any

import psycopg
from django.db.models import Q, QuerySet

from ..runtime.listening import connect
from ..sql.cursors import fetch_one, run_query
from .connections import give_back, usable
from .errors import LockLost

__all__ = ["HeldLock"]

logger = logging.getLogger("litejobs.locks")

#: How long a failed renewal waits before the next try, as a share of the ttl.
RETRY_SHARE = 10
#: How long the release waits for a renewal under way before it uses a connection of its own.
STOP_WAIT = 2.0


class HeldLock:
    """What ``with litejobs.lock(key, ...) as held:`` gives the block.

    ``key``; ``token``, the fencing value: greater than any earlier holder's token, to be
    written beside what the block changes and compared on every write (``update``);
    ``ttl``; ``lost``, True once the lock is no longer this block's; ``check()``, which raises
    ``LockLost`` once it is.
    """

    def __init__(
        self,
        *,
        key: str,
        token: int,
        ttl: timedelta,
        alias: str,
        conn: psycopg.Connection[Any],
        sent_at: float,
    ) -> None:
        self.key = key
        self.token = token
        self.ttl = ttl
        self._alias = alias
        self._conn = conn
        #: Until when (monotonic) the hold is sure: the last landed statement's send + ttl.
        self._until = sent_at + ttl.total_seconds()
        self._lost = False
        self._done = threading.Event()
        self._renewer = threading.Thread(
            target=self._renew_until_done, name=f"litejobs-lock {key}", daemon=True
        )
        self._renewer.start()

    def __repr__(self) -> str:
        return f"<HeldLock {self.key!r} token {self.token}{' lost' if self.lost else ''}>"

    @property
    def lost(self) -> bool:
        """True once the lock may be another's: a renewal found it gone, or none landed
        within the ttl."""
        return self._lost or time.monotonic() >= self._until

    def check(self) -> None:
        """Raise ``LockLost`` if the lock was lost: call it between steps of a long block."""
        if self.lost:
            raise self.lost_error()

    def lost_error(self) -> LockLost:
        """The error the block's end raises when the lock was lost."""
        return LockLost(
            f"The lock {self.key!r} (token {self.token}) was lost while the block ran: no "
            f"renewal landed within its ttl, or another holder took it. Keep blocks from "
            "stalling longer than the ttl, and write the token beside what the block changes "
            "so a later holder's writes win (HeldLock.update)."
        )

    def update(self, rows: QuerySet[Any], *, fence: str = "fence", **values: Any) -> int:
        """``rows.update(**values)`` fenced by the token: only rows whose ``fence`` field is
        empty or at most this token are changed, and their ``fence`` is set to it. Answers how
        many rows changed; 0 for a row a later holder wrote (``fence`` above this token)."""
        current = Q(**{f"{fence}__isnull": True}) | Q(**{f"{fence}__lte": self.token})
        return rows.filter(current).update(**{fence: self.token}, **values)

    # The renewal thread ----------------------------------------------------------------

    def _renew_until_done(self) -> None:
        interval = self.ttl.total_seconds() / 3
        pause = interval
        while not self._done.wait(pause):
            sent_at = time.monotonic()
            try:
                renewed = self._renew()
            except psycopg.Error as error:
                if time.monotonic() >= self._until:
                    self._lose("no renewal landed within its ttl", error)
                    return
                logger.warning("lock %r: renewal failed, retrying: %s", self.key, error)
                pause = self.ttl.total_seconds() / RETRY_SHARE
                continue
            if not renewed:
                self._lose("it was released, lapsed or taken over")
                return
            self._until = sent_at + self.ttl.total_seconds()
            pause = interval

    def _renew(self) -> bool:
        """One renewal on the lock's connection (reconnecting when it broke)."""
        if not usable(self._conn):
            self._conn.close()
            self._conn = connect(self._alias)
        with self._conn.cursor() as cursor:
            params = {"key": self.key, "token": self.token, "ttl": self.ttl, "db_now": None}
            run_query(cursor, "lock_renew", params)
            return fetch_one(cursor) is not None

    def _lose(self, why: str, error: Exception | None = None) -> None:
        self._lost = True
        logger.warning("lock %r (token %s) lost: %s", self.key, self.token, why, exc_info=error)

    # The release -----------------------------------------------------------------------

    def release(self) -> None:
        """Stop renewing and release the lock (the block's end); ``lost`` then says whether
        the block held it to the end. A release that cannot reach the database leaves the
        lock to lapse after its ttl."""
        self._done.set()
        self._renewer.join(STOP_WAIT)
        conn = self._conn if not self._renewer.is_alive() else None
        try:
            if conn is None or not usable(conn):
                conn = connect(self._alias)
            self._released(conn)
        except psycopg.Error as error:
            logger.warning("lock %r: release failed, it lapses after its ttl: %s", self.key, error)
        finally:
            if conn is not None:
                give_back(self._alias, conn)

    def _released(self, conn: psycopg.Connection[Any]) -> None:
        lost = self.lost
        with conn.cursor() as cursor:
            params = {"key": self.key, "token": self.token, "lost": lost, "db_now": None}
            run_query(cursor, "lock_release", params)
            row = fetch_one(cursor)
        if not lost and (row is None or row["lapsed"]):
            self._lose("it was found lapsed or taken over at its release")
