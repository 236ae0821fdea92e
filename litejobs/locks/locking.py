"""``litejobs.lock``: one holder of a key across every host, for work outside the job queue.

Taking the lock is one statement (``lock_acquire``) on the lock's own connection; while the key
is held, the waiter LISTENs on ``litejobs_locks`` (the holder's release wakes it) and tries
again at the latest when the holder's hold runs out, with a backoff in between, until ``wait``
has passed. Locks run on the database's clock always, an injected clock included: their
renewals run in real time.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import psycopg

from ..conf import settings
from ..core.durations import format_duration, parse_duration
from ..core.errors import InvalidInput
from ..runtime.listening import connect
from ..sql.cursors import fetch_one, run_query
from .connections import borrow, give_back
from .errors import LockWaitTimeout
from .holding import HeldLock

__all__ = ["MAX_KEY_LENGTH", "lock"]

MAX_KEY_LENGTH = 200
#: A ttl's bounds: a second (renewals every third of it), a day (how long a dead holder may
#: keep a key at most).
MIN_TTL = timedelta(seconds=1)
MAX_TTL = timedelta(days=1)
#: The longest ``wait=``.
MAX_WAIT = timedelta(days=1)
#: The NOTIFY channel a contended key's release is sent on (payload: the key).
CHANNEL = "litejobs_locks"
#: The waiter's pauses between tries, doubling from the first to the longest (seconds); a
#: release wakes it at once, and the holder's expiry bounds every pause.
FIRST_PAUSE = 0.05
LONGEST_PAUSE = 2.0
#: Past the holder's expiry, how long a waiter gives the database's clock before trying.
EXPIRY_MARGIN = 0.005


class _OneTtl:
    """``wait``'s default: as long as the ttl."""

    def __repr__(self) -> str:
        return "one ttl"


ONE_TTL: Any = _OneTtl()


@contextmanager
def lock(
    key: str, *, ttl: object, wait: object = ONE_TTL, using: str | None = None
) -> Iterator[HeldLock]:
    """Hold ``key`` across every host while the block runs: ``with lock("digest:42",
    ttl="2m", wait="10s") as held:``.

    ``ttl`` (1s to 1d) is how long a holder that died keeps the key; the hold is renewed every
    third of it while the block runs. ``wait`` bounds the wait for another holder (0 or None:
    one try; by default one ttl), past which ``LockWaitTimeout`` is raised. ``held.token`` is
    greater than any earlier holder's: write it beside what the block changes and compare it
    on write (``held.update``). When the lock is lost while the block runs, ``held.lost`` turns
    True and the block's end raises ``LockLost``. The lock is taken, renewed and released on
    a connection of its own (``using``: the database alias, ``LITEJOBS["DATABASE"]`` by
    default), so other hosts see it at once even inside ``transaction.atomic()``.
    """
    key, span, patience = _checked(key, ttl, wait)
    held = _acquire(key, span, patience, using or settings.DATABASE)
    try:
        yield held
    except BaseException as error:
        held.release()
        if held.lost:
            error.add_note(str(held.lost_error()))
        raise
    held.release()
    if held.lost:
        raise held.lost_error()


def _checked(key: object, ttl: object, wait: object) -> tuple[str, timedelta, timedelta]:
    """The key, ttl and wait, or ``InvalidInput`` naming what cannot work."""
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_LENGTH or "\x00" in key:
        raise InvalidInput(
            f"A lock key is a non-empty string of at most {MAX_KEY_LENGTH} characters without "
            f"NUL; got {type(key).__name__} of length {len(key) if isinstance(key, str) else '-'}.",
            code="lock-key-invalid",
        )
    span = _duration(ttl, "ttl", "lock-ttl-invalid", MIN_TTL, MAX_TTL)
    if wait is ONE_TTL:
        return key, span, span
    patience = _duration(wait or 0, "wait", "lock-wait-invalid", timedelta(0), MAX_WAIT)
    return key, span, patience


def _duration(value: object, name: str, code: str, low: timedelta, high: timedelta) -> timedelta:
    """``value`` as a duration from ``low`` to ``high``, else ``InvalidInput`` with ``code``."""
    bounds = f"from {format_duration(low)} to {format_duration(high)}"
    try:
        span = parse_duration(value, name=f"A lock's {name}")
    except InvalidInput as error:
        raise InvalidInput(f"{error.args[0]} It must be {bounds}.", code=code) from None
    if not low <= span <= high:
        raise InvalidInput(
            f"A lock's {name} must be {bounds}; got {format_duration(span)}.", code=code
        )
    return span


def _acquire(key: str, ttl: timedelta, wait: timedelta, alias: str) -> HeldLock:
    """Take the key, waiting up to ``wait`` for its holder; the held lock (which keeps the
    connection until its release)."""
    conn = borrow(alias)
    try:
        try:
            return _take(conn, key, ttl, wait, alias)
        except psycopg.OperationalError:
            # A kept connection the server dropped meanwhile (a restart): once more on a new one.
            conn.close()
            conn = connect(alias)
            return _take(conn, key, ttl, wait, alias)
    except LockWaitTimeout:
        give_back(alias, conn)
        raise
    except BaseException:
        conn.close()
        raise


def _take(
    conn: psycopg.Connection[Any], key: str, ttl: timedelta, wait: timedelta, alias: str
) -> HeldLock:
    """Try until the key is taken or ``wait`` has passed (one try when it is zero)."""
    params = {
        "key": key,
        "ttl": ttl,
        "host": socket.gethostname()[:255],
        "pid": os.getpid(),
        "db_now": None,
    }
    give_up_at = time.monotonic() + wait.total_seconds()
    pause = FIRST_PAUSE
    listening = False
    while True:
        sent_at = time.monotonic()
        with conn.cursor() as cursor:
            run_query(cursor, "lock_acquire", params)
            row = fetch_one(cursor) or {}
        taken = row.get("token") is not None
        left = give_up_at - time.monotonic()
        if listening and (taken or left <= 0):
            conn.execute(f"UNLISTEN {CHANNEL}")
        if taken:
            return HeldLock(
                key=key, token=row["token"], ttl=ttl, alias=alias, conn=conn, sent_at=sent_at
            )
        if left <= 0:
            raise _busy(key, wait, row)
        if not listening:
            conn.execute(f"LISTEN {CHANNEL}")
            listening = True
        expires_in = row.get("expires_in")
        until_free = expires_in + EXPIRY_MARGIN if expires_in is not None else pause
        _wait_for_release(conn, key, max(min(left, pause, until_free), 0.0))
        pause = min(pause * 2, LONGEST_PAUSE)


def _wait_for_release(conn: psycopg.Connection[Any], key: str, seconds: float) -> None:
    """Block up to ``seconds``, or until a release of ``key`` is announced."""
    for notice in conn.notifies(timeout=seconds):
        if notice.payload == key:
            return


def _busy(key: str, wait: timedelta, row: dict[str, Any]) -> LockWaitTimeout:
    holder = f"{row['host']} (pid {row['pid']})" if row.get("host") else "another holder"
    ends = (
        f", whose hold ends in {format_duration(timedelta(seconds=row['expires_in']))} unless "
        "renewed"
        if row.get("expires_in") is not None
        else ""
    )
    waited = f"after waiting {format_duration(wait)}" if wait else "at the one try (wait=0)"
    return LockWaitTimeout(
        f"The lock {key!r} is held by {holder}{ends}; gave up {waited}. Try later, pass a "
        "longer wait=, or leave the work to the holder."
    )
