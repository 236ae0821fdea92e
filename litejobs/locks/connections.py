"""The locks' own database connections: autocommit psycopg connections, apart from Django's.

A lock is taken, renewed and released on a connection of its own, never in the caller's
transaction: another host sees the lock the moment ``lock()`` returns, even inside
``transaction.atomic()``, and a rolled-back block cannot undo a release. Each held lock
borrows one connection for its hold; a few idle ones are kept per process for the next lock,
so an uncontended acquire and release are one statement each, with no connection set-up.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import psycopg
from psycopg import pq

from ..runtime.listening import connect

__all__ = ["borrow", "close_idle", "give_back"]

#: Idle connections kept per database alias for the next lock of this process.
KEEP_IDLE = 4

_mutex = threading.Lock()
_idle: dict[str, list[psycopg.Connection[Any]]] = {}
#: The process the idle connections were opened by: a forked child never uses its parent's.
_opened_by = os.getpid()


def borrow(alias: str) -> psycopg.Connection[Any]:
    """An idle connection to ``alias`` of this process, else a new one."""
    global _opened_by
    with _mutex:
        if _opened_by != os.getpid():
            # The parent's sockets: left to the parent, neither used nor closed here.
            _idle.clear()
            _opened_by = os.getpid()
        idle = _idle.setdefault(alias, [])
        while idle:
            conn = idle.pop()
            if usable(conn):
                return conn
            conn.close()
    return connect(alias)


def give_back(alias: str, conn: psycopg.Connection[Any]) -> None:
    """Keep ``conn`` for the next lock, or close it (broken, busy, or enough kept)."""
    with _mutex:
        idle = _idle.setdefault(alias, [])
        if usable(conn) and _opened_by == os.getpid() and len(idle) < KEEP_IDLE:
            idle.append(conn)
            return
    conn.close()


def usable(conn: psycopg.Connection[Any]) -> bool:
    """Open, not broken, and outside any transaction."""
    return (
        not conn.closed
        and not conn.broken
        and conn.info.transaction_status == pq.TransactionStatus.IDLE
    )


def close_idle() -> None:
    """Close this process's idle lock connections (a test database about to be dropped)."""
    with _mutex:
        kept = [conn for idle in _idle.values() for conn in idle]
        _idle.clear()
    for conn in kept:
        conn.close()
