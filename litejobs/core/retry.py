"""Retry policies: bounded attempts, a backoff curve and jitter. Pure maths, no clock."""

from __future__ import annotations

import dataclasses
import hashlib
import random
from collections.abc import Collection
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from .durations import format_duration, parse_duration
from .enums import Backoff, Jitter, values_of
from .errors import DeclarationError, InvalidInput, Permanent
from .spelling import did_you_mean

BACKOFFS = values_of(Backoff)
JITTERS = values_of(Jitter)
MAX_ATTEMPTS = 1000


@dataclass(frozen=True)
class _RetryValues:
    """A retry policy's values, each as what it holds: ``Retry`` reads them as people write
    them, checks them, and keeps them here."""

    attempts: int
    backoff: Backoff
    base: timedelta
    max: timedelta
    jitter: Jitter
    give_up_on: tuple[type[BaseException], ...]


class Retry(_RetryValues):
    """How a failed attempt is retried.

    ``attempts`` counts every run including the first (``attempts=1``: never retried). The
    delay before retry *n* (n = failed attempts so far) is ``base`` (fixed), ``base * n``
    (linear) or ``base * 2**(n-1)`` (exponential), capped at ``max``, then jittered: ``equal``
    keeps at least half the delay, ``full`` draws from zero, ``none`` keeps it exact. Jitter is
    derived from the job id and attempt, so a replayed computation gives the same instant.
    An exception of a class in ``give_up_on`` (or ``litejobs.Permanent``) stops at once.
    """

    def __init__(
        self,
        attempts: int = 3,
        backoff: Backoff | str = Backoff.EXPONENTIAL,
        base: timedelta | str | float = "2s",
        max: timedelta | str | float = "10m",
        jitter: Jitter | str = Jitter.EQUAL,
        give_up_on: Collection[type[BaseException]] = (),
    ) -> None:
        first, cap = _delays(base, max)
        _check_attempts(attempts)
        _check_curve(backoff, jitter)
        if cap < first:
            raise DeclarationError(
                f"Retry.max ({max!r}) must not be below Retry.base ({base!r}).",
                code="retry-invalid",
            )
        super().__init__(
            attempts, Backoff(backoff), first, cap, Jitter(jitter), _exceptions(give_up_on)
        )

    @classmethod
    def coerce(cls, value: Retry | dict[str, Any] | int | None) -> Retry:
        """A ``Retry`` from a ``Retry``, a dict of its fields, or a number of attempts."""
        if isinstance(value, Retry):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return cls(attempts=value)
        if isinstance(value, dict):
            fields = [f.name for f in dataclasses.fields(cls)]
            unknown = sorted(str(name) for name in value if name not in fields)
            if unknown:
                raise DeclarationError(
                    f"retry has unknown fields {unknown}; a Retry takes {', '.join(fields)}."
                    f"{did_you_mean(unknown[0], fields)}",
                    code="retry-invalid",
                )
            return cls(**value)
        raise DeclarationError(
            f"retry must be a litejobs.Retry, a dict of its fields or a number of attempts; "
            f"got {value!r}.",
            code="retry-invalid",
        )

    def describe(self) -> str:
        """The policy as an operator reads it: "5 attempts, exponential backoff from 2s to 10m"."""
        attempts = f"{self.attempts} attempt{'' if self.attempts == 1 else 's'}"
        if self.attempts == 1:
            return f"{attempts}, never retried"
        base, cap = format_duration(self.base), format_duration(self.max)
        if self.backoff == Backoff.FIXED or base == cap:
            delays = f"{base} apart"
        else:
            delays = f"{self.backoff} backoff from {base} to {cap}"
        jitter = "" if self.jitter == Jitter.NONE else f" ({self.jitter} jitter)"
        return f"{attempts}, {delays}{jitter}"

    def unjittered_delay(self, failed_attempts: int) -> timedelta:
        """The backoff before the next attempt after ``failed_attempts`` failures, unjittered."""
        n = max(1, failed_attempts)
        factor = {
            Backoff.FIXED: 1,
            Backoff.LINEAR: n,
            Backoff.EXPONENTIAL: 2 ** min(n - 1, 60),
        }[self.backoff]
        base, cap = self.base, self.max
        seconds = base.total_seconds() * factor
        return min(timedelta(seconds=min(seconds, cap.total_seconds())), cap)

    def delay(self, failed_attempts: int, *, seed: str = "") -> timedelta:
        """The jittered backoff; deterministic for a given ``seed`` (the job id)."""
        delay = self.unjittered_delay(failed_attempts)
        if self.jitter == Jitter.NONE or delay <= timedelta(0):
            return delay
        digest = hashlib.sha256(f"{seed}:{failed_attempts}".encode()).digest()
        fraction = random.Random(digest).random()  # noqa: S311 - spreading retries, not secrets
        if self.jitter == Jitter.FULL:
            return delay * fraction
        return delay / 2 + (delay / 2) * fraction

    def gives_up_on(self, error: BaseException) -> bool:
        """Whether ``error`` ends the job at once instead of retrying."""
        return isinstance(error, (Permanent, *self.give_up_on))


# The groups of Retry's checks, in the order it reports problems ------------------------------


def _delays(base: object, cap: object) -> tuple[timedelta, timedelta]:
    try:
        return parse_duration(base, name="Retry.base"), parse_duration(cap, name="Retry.max")
    except InvalidInput as exc:
        raise DeclarationError(exc.args[0], code="retry-invalid") from exc


def _check_attempts(attempts: object) -> None:
    if (
        not isinstance(attempts, int)
        or isinstance(attempts, bool)
        or not 1 <= attempts <= MAX_ATTEMPTS
    ):
        raise DeclarationError(
            f"Retry.attempts must be a whole number from 1 to {MAX_ATTEMPTS}; got {attempts!r}.",
            code="retry-invalid",
        )


def _check_curve(backoff: object, jitter: object) -> None:
    if backoff not in BACKOFFS:
        raise DeclarationError(
            f"Retry.backoff must be one of {BACKOFFS}; got {backoff!r}.", code="retry-invalid"
        )
    if jitter not in JITTERS:
        raise DeclarationError(
            f"Retry.jitter must be one of {JITTERS}; got {jitter!r}.", code="retry-invalid"
        )


def _exceptions(give_up_on: object) -> tuple[type[BaseException], ...]:
    if not isinstance(give_up_on, list | tuple | set | frozenset) or not all(
        isinstance(c, type) and issubclass(c, BaseException) for c in give_up_on
    ):
        raise DeclarationError(
            "Retry.give_up_on must be a tuple of exception classes.", code="retry-invalid"
        )
    return tuple(give_up_on)
