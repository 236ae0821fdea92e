"""Durations as people write them: ``"10ms"``, ``"30s"``, ``"10m"``, ``"2h"``, ``"3d"``."""

import re
from datetime import timedelta

from .errors import InvalidInput

#: The longest duration litejobs takes anywhere (a delay, a timeout, a retention, a link's
#: lifetime): 100 years, so that a time plus any of them is still a date.
LONGEST = timedelta(days=36525)
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)\s*$")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(value: object, *, name: str = "duration", allow_zero: bool = True) -> timedelta:
    """A ``timedelta`` from a string like ``"30s"``, a number of seconds, or a ``timedelta``.

    Negative values are refused (code ``duration-invalid``), as is zero unless ``allow_zero``,
    and anything longer than ``LONGEST`` (100 years).
    """
    if isinstance(value, timedelta):
        result = value
    elif isinstance(value, bool):
        raise InvalidInput(f"{name} must be a duration, not {value!r}.", code="duration-invalid")
    elif isinstance(value, int | float):
        result = _seconds(value, name, value)
    elif isinstance(value, str) and (match := _PATTERN.match(value)):
        result = _seconds(float(match.group(1)) * _UNITS[match.group(2)], name, value)
    else:
        raise InvalidInput(
            f"{name} must be a duration such as '30s', '10m', '2h', '3d' or a timedelta; "
            f"got {value!r}.",
            code="duration-invalid",
        )
    if result < timedelta(0) or (not allow_zero and result == timedelta(0)):
        raise InvalidInput(
            f"{name} must be {'positive' if not allow_zero else 'zero or more'}; got {value!r}.",
            code="duration-invalid",
        )
    if result > LONGEST:
        raise _too_long(name, value)
    return result


def _too_long(name: str, value: object) -> InvalidInput:
    return InvalidInput(
        f"{name} must be a finite duration of at most 100 years ({LONGEST.days}d); got {value!r}.",
        code="duration-invalid",
    )


def _seconds(seconds: float, name: str, value: object) -> timedelta:
    """``timedelta(seconds=...)``, refusing what no ``timedelta`` holds (NaN, over 2.7 million
    years) as too long, with the same code as any unreadable duration."""
    try:
        return timedelta(seconds=seconds)
    except (OverflowError, ValueError):
        raise _too_long(name, value) from None


#: The units a duration is shown in, largest first (weeks are shown as days: ``90d``).
_SHOWN_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def format_duration(delta: timedelta) -> str:
    """A duration as people write it, exact to the millisecond: ``90d``, ``1h30m``, ``10s``,
    ``250ms`` (``format_age`` rounds an age to its two largest units)."""
    if delta < timedelta(0):
        return f"-{format_duration(-delta)}"
    seconds, millis = divmod(round(delta / timedelta(milliseconds=1)), 1000)
    parts = []
    for unit, size in _SHOWN_UNITS:
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    if millis:
        parts.append(f"{millis}ms")
    return "".join(parts) or "0s"


def format_seconds(seconds: float) -> str:
    """A number of seconds as ``format_duration`` shows it: ``5400`` is ``1h30m``."""
    return format_duration(timedelta(seconds=seconds))


def format_age(delta: timedelta) -> str:
    """A duration as an operator reads it: ``45s``, ``12m 5s``, ``3h 20m``, ``2d 4h``."""
    seconds = max(int(delta.total_seconds()), 0)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")]
    first = next((i for i, (value, _) in enumerate(parts) if value), len(parts) - 1)
    shown = [f"{value}{unit}" for value, unit in parts[first : first + 2] if value]
    return " ".join(shown) or "0s"
