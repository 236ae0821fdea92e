"""``Rate``: at most ``limit`` starts in any window of ``per`` among jobs of one rate key,
counted across every worker; and the rate a queue gives every job of it (``QUEUE_RATES``).

A job with a rate carries its rate key, limit and window on its row (set at enqueue); the
limited claim counts its starts in ``litejobs_rate`` under the claim's lock
(``litejobs.jobs.claims``). This module is the declaration's half: the value, its checks and
the key a run gets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..conf import settings
from ..core.durations import parse_duration
from ..exceptions import DeclarationError, InvalidInput

#: The largest ``limit`` a rate takes: the claim keeps one timestamp per start in the window.
MAX_LIMIT = 100_000
#: The prefix of the rate key every job of a queue with a rate shares.
QUEUE_KEY_PREFIX = "queue:"


@dataclass(frozen=True)
class Rate:
    """At most ``limit`` starts in any window of length ``per`` (sliding) among jobs whose
    ``key(...)`` is equal, across every worker process.

    ``per`` is a duration (``"1m"``, ``"500ms"``, seconds, a ``timedelta``). ``key`` is a
    callable over the job's arguments answering a non-empty string (one bucket per value, e.g.
    ``lambda account_id: f"partner:{account_id}"``); without it, all runs of the declaration
    share one bucket. Equal keys share one bucket whichever job declares them.
    """

    limit: int
    per: timedelta | str | float = field(default="1s")
    key: Callable[..., str] | None = None

    def __post_init__(self) -> None:
        limit = self.limit
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
            raise DeclarationError(
                f"Rate limit must be a whole number from 1 to {MAX_LIMIT:,}; got {limit!r}. "
                "For more starts, count them over a shorter window (limit=1000, per='1s').",
                code="rate-invalid",
            )
        try:
            per = parse_duration(self.per, name="Rate per", allow_zero=False)
        except InvalidInput as error:
            raise DeclarationError(error.args[0], code="rate-invalid") from error
        if per < timedelta(milliseconds=1):
            raise DeclarationError(
                f"Rate per must be at least 1ms; got {self.per!r}.", code="rate-invalid"
            )
        object.__setattr__(self, "per", per)
        if self.key is not None and not callable(self.key):
            raise DeclarationError(
                "Rate key must be a callable over the job's arguments answering a string, e.g. "
                f"key=lambda account_id: f'partner:{{account_id}}'; got {self.key!r}.",
                code="rate-invalid",
            )

    @property
    def window(self) -> timedelta:
        """``per`` as a ``timedelta`` (parsed at construction)."""
        per = self.per
        assert isinstance(per, timedelta)  # noqa: S101 - __post_init__ parsed it
        return per

    @classmethod
    def coerce(cls, value: Any, *, what: str) -> Rate:
        """A ``Rate`` from a ``Rate`` or a ``{"limit": …, "per": …}`` mapping (a setting)."""
        if isinstance(value, Rate):
            return value
        if isinstance(value, Mapping) and set(value) <= {"limit", "per"} and "limit" in value:
            return cls(limit=value["limit"], per=value.get("per", "1s"))
        raise DeclarationError(
            f"{what} must be litejobs.Rate(limit=…, per=…) or {{'limit': 100, 'per': '1m'}}; "
            f"got {value!r}.",
            code="rate-invalid",
        )


def queue_rate(queue: str) -> Rate | None:
    """The rate every job of ``queue`` shares (``LITEJOBS["QUEUE_RATES"][queue]``), if any."""
    rates = settings.QUEUE_RATES
    if not isinstance(rates, Mapping) or queue not in rates:
        return None
    return Rate.coerce(rates[queue], what=f"LITEJOBS['QUEUE_RATES'][{queue!r}]")


def queue_key(queue: str) -> str:
    """The rate key every job of a queue with a rate shares."""
    return f"{QUEUE_KEY_PREFIX}{queue}"


def check_rate(rate: Any, job_name: str) -> Rate | None:
    """``rate`` if it is a ``Rate`` or None, else ``DeclarationError`` (``rate-invalid``)."""
    if rate is None or isinstance(rate, Rate):
        return rate
    raise DeclarationError(
        f"Job {job_name!r}: rate= takes litejobs.Rate(limit=…, per=…, key=…); got {rate!r}.",
        code="rate-invalid",
    )


def rate_columns(rate: Rate | None) -> dict[str, Any]:
    """The limit and window a job row of this rate carries (NULLs without one)."""
    if rate is None:
        return {"rate_limit": None, "rate_per": None}
    return {"rate_limit": rate.limit, "rate_per": rate.window}


def rated_columns(definition: Any) -> dict[str, Any]:
    """The rate columns of a statement's rows: the declaration's own rate (``rate=``), else
    its queue's; ``rate_key`` is the bucket of rows that derive none (the declaration's name,
    or the queue's key), None without a rate."""
    own = getattr(definition, "rate", None)
    if own is not None:
        return {"rate_key": definition.name, **rate_columns(own)}
    rate = queue_rate(definition.queue)
    return {"rate_key": queue_key(definition.queue) if rate else None, **rate_columns(rate)}


@dataclass(frozen=True)
class Window:
    """A rate bucket's starts inside its window as of an instant: (instant, how many)
    entries, oldest first, as the claim records them."""

    entries: tuple[tuple[datetime, int], ...]
    limit: int
    per: timedelta

    @classmethod
    def of(
        cls,
        starts: Sequence[datetime] | None,
        counts: Sequence[int] | None,
        *,
        limit: int,
        per: timedelta,
        now: datetime,
    ) -> Window:
        """The entries of a bucket's ``starts`` and ``counts`` inside ``(now - per, now]``."""
        since = now - per
        kept = sorted((start, n) for start, n in zip(starts or (), counts or (), strict=False))
        return cls(tuple((start, n) for start, n in kept if start > since), limit, per)

    @property
    def used(self) -> int:
        """Starts inside the window."""
        return sum(n for _, n in self.entries)

    @property
    def left(self) -> int:
        """Starts the claim may take now."""
        return max(0, self.limit - self.used)

    @property
    def next_start(self) -> datetime | None:
        """When one more start fits (None: now): the instant the entries that must leave the
        window for it have left."""
        must_leave = self.used - self.limit + 1
        if must_leave <= 0:
            return None
        left = 0
        for start, n in self.entries:
            left += n
            if left >= must_leave:
                return start + self.per
        return None  # pragma: no cover - the entries add up to ``used``
