"""The one ``Problem``: what a check, ``doctor`` or a feature found wrong, and what to do.

Every feature answers its problems as ``Problem`` values: the system checks turn them into
Django check messages (each check its id), ``doctor`` prints and exports them. ``code`` is
stable (documented in the README), ``where`` says what it is about (a module, a workflow
step, a queue), ``message`` says what is wrong and ``hint`` how to fix it when the message
does not. A ``note`` is worth knowing but not wrong (a paused queue, a disabled schedule).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .enums import Severity


@dataclass(frozen=True)
class Problem:
    """Something wrong (or worth knowing): a stable code, what and where, and the fix."""

    code: str
    message: str
    severity: Severity = Severity.ERROR
    where: str = ""
    hint: str = ""
    #: How many things it concerns (``doctor``: jobs, messages), and which, when it lists them.
    count: int = 0
    job_ids: tuple[int, ...] = ()
    schedules: tuple[str, ...] = ()

    @property
    def is_note(self) -> bool:
        """Whether it is a note (worth knowing) rather than a problem."""
        return self.severity == Severity.NOTE

    def as_dict(self) -> dict[str, Any]:
        """The problem as ``doctor --json`` prints it."""
        return {
            "code": self.code,
            "message": self.message,
            "count": self.count,
            "job_ids": list(self.job_ids),
            "schedules": list(self.schedules),
        }


def note(code: str, message: str, **details: Any) -> Problem:
    """A note: worth knowing, not wrong."""
    return Problem(code, message, Severity.NOTE, **details)
