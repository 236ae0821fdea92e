"""JSON payloads: validated at enqueue, redacted wherever they are shown (and URLs shown
without their secrets)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from .errors import InvalidInput

REDACTED = "[redacted]"
#: JSON values that encode and decode to themselves exactly.
_EXACT = frozenset({str, int, bool, type(None)})


#: One encoder for every payload: ``json.dumps`` with options builds a new one per call.
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False, ensure_ascii=False)


def dumps(value: Any) -> str:
    """Compact JSON, refusing NaN and infinities (PostgreSQL's jsonb refuses them too)."""
    return _ENCODER.encode(value)


def round_trip(value: Any) -> str | None:
    """``value`` as JSON text (``dumps``), or None when it is no JSON value that reads back as
    itself: a tuple comes back a list, a dict's number keys come back text, and a date, a
    Decimal or a model instance does not encode at all."""
    try:
        text = dumps(value)
        return text if json.loads(text) == value else None
    except (TypeError, ValueError):
        return None


def encode_payload(job_name: str, payload: Mapping[str, Any], max_bytes: int) -> str:
    """The payload as JSON text, or ``InvalidInput`` naming the argument that does not round-trip.

    A value round-trips when ``json.loads(json.dumps(value)) == value``: tuples, sets, dates,
    Decimals, model instances and dicts with non-string keys do not. Pass identifiers instead.
    """
    try:
        text = dumps(dict(payload))
        # Flat payloads of str, int, bool and None (the usual ids) round-trip by construction;
        # anything else is checked by decoding it again.
        round_trips = all(type(value) in _EXACT for value in payload.values()) or (
            json.loads(text) == payload
        )
    except (TypeError, ValueError):
        round_trips = False
    if round_trips:
        if "\\u0000" in text:  # JSON's escape of NUL, which PostgreSQL's text and jsonb refuse
            _refuse_nul(job_name, payload)
        return _within_limit(job_name, text, max_bytes)
    # Something does not round-trip: find the argument to name it.
    for name, value in payload.items():
        if round_trip(value) is None:
            raise InvalidInput(
                f"Argument {name!r} of job {job_name!r} is a {type(value).__name__}, which does "
                "not round-trip through JSON. Pass plain JSON values (str, int, float, bool, "
                "None, lists and dicts with string keys) such as an id, not objects.",
                code="payload-not-json",
            )
    raise InvalidInput(
        f"The payload of job {job_name!r} does not round-trip through JSON.",
        code="payload-not-json",
    )


def _holds_nul(value: Any) -> bool:
    """Whether a JSON value holds a NUL character in any string (keys included)."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(key) or _holds_nul(nested) for key, nested in value.items())
    if isinstance(value, list):
        return any(_holds_nul(nested) for nested in value)
    return False


def _refuse_nul(job_name: str, payload: Mapping[str, Any]) -> None:
    """Refuse an argument holding a NUL character (``payload-nul``), naming it, not its value
    (a literal backslash before ``u0000`` reads alike in JSON and passes)."""
    for name, value in payload.items():
        if _holds_nul(name) or _holds_nul(value):
            raise InvalidInput(
                f"Argument {name!r} of job {job_name!r} holds a NUL character (\\x00), which "
                "PostgreSQL cannot store in text or JSON. Remove it (or pass the data "
                "base64-encoded).",
                code="payload-nul",
            )


def _within_limit(job_name: str, text: str, max_bytes: int) -> str:
    size = len(text) if text.isascii() else len(text.encode())
    if size > max_bytes:
        raise InvalidInput(
            f"The payload of job {job_name!r} is {size} bytes, over the {max_bytes}-byte limit "
            "(LITEJOBS['MAX_PAYLOAD_BYTES']). Store the data in your tables and pass its id.",
            code="payload-too-large",
        )
    return text


def redact(payload: Any, sensitive: Iterable[str]) -> Any:
    """A copy of the payload with the values of its sensitive fields replaced. A dotted name
    is a field inside a field (``"payload.card"``: the ``card`` of the ``payload`` object)."""
    if not isinstance(payload, dict):
        return payload
    fields = set(sensitive)
    inner: dict[str, list[str]] = {}
    for name in fields:
        head, dot, rest = name.partition(".")
        if dot:
            inner.setdefault(head, []).append(rest)
    return {
        k: REDACTED if k in fields else redact(v, inner[k]) if k in inner else v
        for k, v in payload.items()
    }


def _field(payload: Any, name: str) -> Any:
    """The value of a (dotted) field of the payload, if it has one."""
    if not isinstance(payload, dict):
        return None
    if name in payload or "." not in name:
        return payload.get(name)
    head, _, rest = name.partition(".")
    return _field(payload.get(head), rest)


class Scrubber:
    """Blanks the values of a payload's sensitive fields out of texts: stored error messages and
    tracebacks, the attempt history, step errors, compensation failures and log lines.

    Every form a value can take in a text is blanked: the whole value as ``str``, ``repr`` and
    JSON, and, inside a dict or list, every string and number it holds at any depth (a
    sensitive ``{"card": {"number": "4111..."}}`` never shows its number). Built once per
    failing run; longer forms are replaced first, so a container goes as a whole.
    """

    def __init__(self, payload: Any, sensitive: Iterable[str]) -> None:
        shown: set[str] = set()
        for field in sensitive:
            _forms(_field(payload, field), shown)
        # One character (a digit, a letter) would blank every occurrence of it in the text.
        self._forms = sorted((form for form in shown if len(form) >= 2), key=len, reverse=True)

    def __call__(self, text: str) -> str:
        if not text:
            return text
        for form in self._forms:
            text = text.replace(form, REDACTED)
        return text


def _forms(value: Any, into: set[str]) -> None:
    """Add the texts ``value`` and everything nested in it appear as."""
    if value is None or value == "" or isinstance(value, bool):
        return
    into.update((str(value), repr(value)))
    with contextlib.suppress(TypeError, ValueError):  # stored payloads are JSON; others may not be
        into.add(dumps(value))
    if isinstance(value, dict):
        for nested in value.values():
            _forms(nested, into)
    elif isinstance(value, list | tuple):
        for nested in value:
            _forms(nested, into)


def blank_out(value: Any, scrub: Scrubber) -> Any:
    """A JSON value (a job's result, its progress) with ``scrub`` applied to every string in
    it, keys included; a number whose text holds a sensitive value reads ``REDACTED``."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value if scrub(str(value)) == str(value) else REDACTED
    if isinstance(value, dict):
        return {scrub(str(key)): blank_out(nested, scrub) for key, nested in value.items()}
    if isinstance(value, list):
        return [blank_out(nested, scrub) for nested in value]
    return value


def scrub(text: str, payload: Any, sensitive: Iterable[str]) -> str:
    """``text`` (an error message, a traceback, a log line) with sensitive payload values
    blanked out; see ``Scrubber`` (build one to scrub several texts of one run)."""
    return Scrubber(payload, sensitive)(text)


def display_url(url: str) -> str:
    """The URL as logs and lists may show it: scheme and host only (a path may be a secret)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(invalid URL)"
    return f"{parts.scheme}://{host}{port}/…" if host else "(invalid URL)"
