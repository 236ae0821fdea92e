"""W13: a fenced lock taken and released, one after another from one process, beside the floor
of a session advisory lock (``pg_try_advisory_lock`` then ``pg_advisory_unlock``).

Each pair's time is read with ``time.perf_counter`` (a measurement, not product code), and the
statements litejobs sends are counted client-side on the lock's kept connection: each sent
statement is one round trip, since none is pipelined.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg

from ..locks import connections, lock
from .report import percentile

__all__ = ["floor_pairs", "lock_pairs"]

#: The keys the pairs cycle through (a key is taken over from its last release each time).
KEYS = 100
TTL = "30s"


class _Counting(psycopg.Cursor):
    """A cursor counting the statements sent through it."""

    sent = 0

    def execute(self, query: Any, params: Any = None, **options: Any) -> Any:
        _Counting.sent += 1
        return super().execute(query, params, **options)


def lock_pairs(alias: str, count: int) -> dict[str, float]:
    """``count`` acquire + release pairs of ``litejobs.lock``: p50 and p95 in ms, and the
    statements (round trips) per pair."""
    kept = connections.borrow(alias)
    kept.cursor_factory = _Counting
    connections.give_back(alias, kept)  # the next lock takes this very connection
    with lock("bench:warm-up", ttl=TTL, wait=0, using=alias):
        pass
    _Counting.sent = 0
    seconds = []
    for n in range(count):
        started = time.perf_counter()
        with lock(f"bench:{n % KEYS}", ttl=TTL, wait=0, using=alias):
            pass
        seconds.append(time.perf_counter() - started)
    sent = _Counting.sent
    connections.close_idle()
    return _figures(seconds, sent / count)


def floor_pairs(conn: psycopg.Connection[Any], count: int) -> dict[str, float]:
    """The floor: ``count`` session advisory lock + unlock pairs on one autocommit connection."""
    seconds = []
    for n in range(count):
        started = time.perf_counter()
        conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (f"bench:{n % KEYS}",))
        conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (f"bench:{n % KEYS}",))
        seconds.append(time.perf_counter() - started)
    return _figures(seconds, 2.0)


def _figures(seconds: list[float], round_trips: float) -> dict[str, float]:
    millis = [value * 1000 for value in seconds]
    return {
        "p50": percentile(millis, 0.5),
        "p95": percentile(millis, 0.95),
        "round trips": round_trips,
    }
