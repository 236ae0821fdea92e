"""What the dashboard's "Needs an operator" says about each of ``doctor``'s problems and notes:
in words, with the admin's own action beside it (a Retry or Resume button, a link to the page
that acts), where ``doctor`` itself names command lines.

Each feature words its own problems (its ``Feature.words``, see ``litejobs.core.remedies``);
``worded`` answers a ``Remedy`` per problem: its sentence and the actions this user may take
(a button or link they may not follow is not offered). A code no feature words keeps
``doctor``'s message.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core import features
from ..core.diagnostics import Problem
from ..core.remedies import Action, Seen

__all__ = ["Remedy", "worded"]


@dataclass(frozen=True)
class Remedy:
    """One problem as the dashboard shows it."""

    code: str
    text: str
    actions: list[Action] = field(default_factory=list)
    note: bool = False


def worded(problem: Problem, seen: Seen) -> Remedy:
    """The dashboard's words and actions for ``problem``."""
    words = next(
        (f.words[problem.code] for f in features.installed() if problem.code in f.words), None
    )
    if words is None:
        return Remedy(problem.code, problem.message, note=problem.is_note)
    text, actions = words(problem, seen)
    return Remedy(problem.code, text, [a for a in actions if a is not None], problem.is_note)
