"""How a job shows wherever an operator reads it (the admin, ``manage.py litejobs``): its
state as read ("ready (due)"), its payload, result and progress with what its declaration
calls sensitive hidden."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..core.enums import JobState
from ..core.payloads import REDACTED, Scrubber, blank_out, redact
from ..exceptions import LitejobsError
from . import catalog
from .operations import PROMOTABLE


def state_label(state: str, run_at: datetime | None, now: datetime) -> str:
    """The state as an operator reads it: a scheduled or failed job whose time passed is due."""
    if state in PROMOTABLE and run_at is not None and run_at <= now:
        return "ready (due)" if state == JobState.SCHEDULED else "failed (retry due)"
    return str(state)


def _hidden(name: str, payload: Any) -> tuple[str, ...] | None:
    """The payload fields to hide wherever a job shows: its declaration's ``sensitive`` (and
    what an add-on adds); ``None`` for a job no installed app declares."""
    try:
        return catalog.sensitive_of(catalog.get(name), payload)
    except LitejobsError:
        return None


def safe_payload(name: str, payload: Any) -> Any:
    """The payload as it may be shown: the declaration's ``sensitive`` fields redacted.

    A row whose job no installed app declares shows every value redacted: nothing says which
    of its fields are safe.
    """
    sensitive = _hidden(name, payload)
    if sensitive is None:
        if isinstance(payload, dict):
            return dict.fromkeys(payload, REDACTED)
        return REDACTED
    return redact(payload, sensitive)


def safe_output(name: str, payload: Any, value: Any) -> Any:
    """A job's result or latest progress as it may be shown: the values of its payload's
    sensitive fields blanked out wherever they appear in it (a body may return or report
    them); for a job no installed app declares, every payload value."""
    sensitive = _hidden(name, payload)
    if sensitive is None:
        sensitive = tuple(payload) if isinstance(payload, dict) else ()
    return blank_out(value, Scrubber(payload, sensitive)) if sensitive else value
