"""Sizes as people write them: ``"500KB"``, ``"50MB"``, ``"2GB"`` (powers of 1,000), or a
number of bytes."""

import re

from .errors import InvalidInput

_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB)?\s*$", re.IGNORECASE)
_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_SHOWN_UNITS = (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("KB", 10**3))


def parse_size(value: object, *, name: str = "size") -> int:
    """A positive number of bytes from ``"50MB"``-style text or a whole number; anything else
    is refused with code ``size-invalid``."""
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    elif isinstance(value, str) and (match := _PATTERN.match(value)):
        size = int(float(match.group(1)) * _UNITS[(match.group(2) or "b").lower()])
    else:
        size = 0
    if size < 1:
        raise InvalidInput(
            f"{name} must be a size such as '50MB', '500KB', '2GB' or a number of bytes "
            f"(1 or more); got {value!r}.",
            code="size-invalid",
        )
    return size


def format_size(size: int) -> str:
    """A number of bytes as people read it: ``50MB``, ``1.5GB``, ``812B``."""
    for unit, scale in _SHOWN_UNITS:
        if size >= scale:
            return f"{size / scale:.1f}".removesuffix(".0") + unit
    return f"{size}B"
