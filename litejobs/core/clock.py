"""The one place litejobs reads the time. Tests and simulations inject their own clock.

Production code calls ``litejobs.clock.now()``, never ``datetime.now()``: the default clock
answers aware UTC instants, ``LITEJOBS["CLOCK"]`` may name another, and ``use_clock`` swaps
it for a block (tests move a ``FrozenClock``).

Leases are the exception. A lease is written by one host and compared by another, so its
expiry is computed and compared on the one clock every host shares: the database's.
``lease_instant()`` is the seam: the SQL takes ``statement_timestamp()`` unless an injected
clock supplies the instant (``{db_now}`` in litejobs' SQL).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Protocol

from django.utils.module_loading import import_string

from .durations import parse_duration
from .project import litejobs_settings


class Clock(Protocol):
    """Anything with ``now()`` answering an aware datetime."""

    def now(self) -> datetime: ...


class SystemClock:
    """The machine's clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class FrozenClock:
    """A clock that moves only when told: ``advance("10m")``, ``set(instant)``. Thread-safe."""

    def __init__(self, start: datetime | None = None) -> None:
        if start is not None and start.tzinfo is None:
            raise ValueError("FrozenClock needs an aware datetime.")
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def set(self, instant: datetime) -> None:
        if instant.tzinfo is None:
            raise ValueError("FrozenClock needs an aware datetime.")
        with self._lock:
            self._now = instant

    def advance(self, by: timedelta | str | float) -> datetime:
        with self._lock:
            self._now += parse_duration(by, name="advance")
            return self._now


_override: Clock | None = None
_configured: Clock | None = None


def get_clock() -> Clock:
    """The clock in force: a ``use_clock`` override, else ``LITEJOBS["CLOCK"]`` (cached)."""
    global _configured
    if _override is not None:
        return _override
    if _configured is None:
        _configured = _named_clock()
    return _configured


def _named_clock() -> Clock:
    """The clock ``LITEJOBS["CLOCK"]`` names, else the machine's (``SystemClock``, the default
    ``litejobs.conf`` documents). Read from the project's settings here: ``litejobs.conf``
    builds on the core, so the core does not import it."""
    configured = litejobs_settings() or {}
    if "CLOCK" not in configured:
        return SystemClock()
    named: Clock = import_string(configured["CLOCK"])()
    return named


def forget_configured_clock(**kwargs: object) -> None:
    """Drop the cached ``LITEJOBS["CLOCK"]`` instance (on ``setting_changed``)."""
    global _configured
    if kwargs.get("setting", "LITEJOBS") == "LITEJOBS":
        _configured = None


def now() -> datetime:
    """The current instant, aware, from the injected clock."""
    return get_clock().now()


def lease_instant() -> datetime | None:
    """The instant lease arithmetic runs at: None means the database's clock.

    Hosts whose clocks disagree must never reap each other's healthy leases, so with the
    machine's clock in force the SQL reads the database's ``statement_timestamp()``. An
    injected clock (a test's ``FrozenClock``, a simulation) supplies its own instant instead.
    """
    current = get_clock()
    return None if isinstance(current, SystemClock) else current.now()


def database_now(alias: str) -> datetime:
    """The instant leases are compared with, for reads outside the runtimes' SQL (doctor, the
    admin): the injected clock's, else the database's (one statement)."""
    instant = lease_instant()
    if instant is not None:
        return instant
    from django.db import connections

    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT statement_timestamp()")
        database_instant: datetime = cursor.fetchone()[0]
        return database_instant


def iso(instant: datetime | None) -> str | None:
    """An instant as ISO 8601 text, for JSON and messages (``None`` stays ``None``)."""
    return instant.isoformat() if instant is not None else None


@contextmanager
def use_clock(clock: Clock) -> Iterator[Clock]:
    """Make ``clock`` the clock of every litejobs call (all threads) inside the block."""
    global _override
    previous, _override = _override, clock
    try:
        yield clock
    finally:
        _override = previous
