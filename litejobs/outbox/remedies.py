"""The dashboard's words and actions for the outbox's problems (``Feature.words``)."""

from __future__ import annotations

from django.utils.translation import ngettext

from ..core.diagnostics import Problem
from ..core.remedies import Seen, Worded, Words


def _outbox_backlog(problem: Problem, seen: Seen) -> Worded:
    n = problem.count
    text = (
        ngettext("%(n)d outbox message waits", "%(n)d outbox messages wait", n) % {"n": n}
        + " to be published"
        + f", the oldest longer than {seen.max_ready_age}. Check that a worker with its relay, "
        "or a relay, runs; its log names a message it cannot publish."
    )
    pending = {"state": "pending"}
    return text, [
        seen.link("List them", "view_outboxmessage", "outboxmessage_changelist", query=pending)
    ]


#: The dashboard's words for each code of the outbox's problems.
WORDS: dict[str, Words] = {"outbox-backlog": _outbox_backlog}
