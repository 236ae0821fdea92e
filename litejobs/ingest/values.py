"""What PostgreSQL cannot keep of a record: a NUL character, a lone surrogate, a number that
is not finite, a key that is no text.

Fed records wait in the buffer as ``jsonb``, and records that do not land are set aside as
``jsonb`` beside their key as ``text``. PostgreSQL refuses ``\\u0000`` in both, a lone
surrogate (``"\\ud800"``) is no UTF-8, ``jsonb`` has no NaN nor infinity, and JSON keys are
texts (``{5: "x"}`` would come back as ``{"5": "x"}``). One such value would abort the
transaction of its whole batch or page, so a record holding one is refused by itself, with
where and why, before anything of it is written.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["Unstorable", "flaw", "text_flaw", "unstorable"]


class Unstorable(enum.Enum):
    """Why a value cannot be kept, as a message says it."""

    NUL = "a NUL character"
    SURROGATE = "a lone surrogate, which is no UTF-8 text"
    NOT_FINITE = "a number that is not finite"
    KEY_NOT_TEXT = "a field name that is no text"


#: Values PostgreSQL keeps whatever they are.
_PLAIN = frozenset({int, bool, type(None)})


def text_flaw(text: str) -> Unstorable | None:
    """Why PostgreSQL cannot keep ``text``, or None."""
    if "\x00" in text:
        return Unstorable.NUL
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return Unstorable.SURROGATE
    return None


def unstorable(value: Any) -> Unstorable | None:
    """Why ``value`` (a JSON value: texts, numbers, lists and dicts of them, at any depth)
    cannot be kept, or None. Walked without recursion: a deep value cannot overflow it."""
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind in _PLAIN:
            continue
        if isinstance(item, str):
            found = text_flaw(item)
        elif isinstance(item, float):
            found = None if math.isfinite(item) else Unstorable.NOT_FINITE
        elif isinstance(item, Mapping):
            found = next(
                (Unstorable.KEY_NOT_TEXT for key in item if not isinstance(key, str)), None
            )
            pending.extend(item.keys())
            pending.extend(item.values())
        else:
            found = None
            if isinstance(item, list | tuple):
                pending.extend(item)
        if found is not None:
            return found
    return None


#: Values a record of only these holds nothing to walk into.
_FLAT = frozenset({str, int, float, bool, type(None)})
_TEXT = frozenset({str})


def flaw(record: Mapping[Any, Any], text: str = "") -> tuple[str, Unstorable] | None:
    """The first field of ``record`` (a name or a value) that cannot be kept, and why; None
    when all can. ``text``, the record as JSON when it was made, spares most records the walk:
    a flat record whose JSON shows no NUL and is UTF-8 holds nothing PostgreSQL refuses (a
    non-finite number made no JSON)."""
    if text and _clean(record, text):
        return None
    for field, value in record.items():
        found = (
            (text_flaw(field) or unstorable(value))
            if isinstance(field, str)
            else Unstorable.KEY_NOT_TEXT
        )
        if found is not None:
            return str(field), found
    return None


def _clean(record: Mapping[Any, Any], text: str) -> bool:
    return (
        "\\u0000" not in text
        and text_flaw(text) is None
        and _TEXT.issuperset(map(type, record))
        and _FLAT.issuperset(map(type, record.values()))
    )
