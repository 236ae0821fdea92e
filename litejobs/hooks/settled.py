"""What a settle hook is told: ``Settled``, one value per ending of a job."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.enums import SettleOutcome

__all__ = ["Settled", "SettledError"]


@dataclass(frozen=True)
class SettledError:
    """The error a job ended with: its class's dotted name and its message (scrubbed and cut
    as the job row keeps them)."""

    error_class: str
    message: str


@dataclass(frozen=True)
class Settled:
    """How one run of a job ended, as its ``on_settled`` hook is told.

    ``outcome`` is one of ``SettleOutcome``: ``done`` (``result`` holds what the body returned),
    ``dead``, ``cancelled`` or ``dropped`` (``error`` holds the last error recorded, ``None``
    when there is none, such as a cancel before the job ever ran). ``key`` names this ending
    and is the same on every run of its hook: a hook that writes elsewhere can make that write
    idempotent on it. ``attempt`` is the hook's own run, 1 the first: above 1, an earlier run
    failed or its worker died, and what it did may have happened. ``tenant`` is the job's.
    """

    job_id: int
    name: str
    outcome: SettleOutcome
    result: Any
    error: SettledError | None
    key: str
    attempt: int
    tenant: str | None
