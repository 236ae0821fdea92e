"""The dashboard's words for every problem and note ``doctor`` answers: a sentence without a
command line, and the admin's own actions, offered only to who may use them."""

from __future__ import annotations

import pytest

from litejobs.admin import problems
from litejobs.core.diagnostics import Problem, note
from litejobs.core.remedies import Seen
from litejobs.doctor import runbooks

#: Codes the page never shows: without a database there is no dashboard to draw.
UNDRAWN = {"database-unreachable", "migrations-unapplied"}
NOTES = ("queue-paused", "schedule-disabled", "schedule-draft-overdue", "webhook-endpoint-disabled")


class Operator:
    """A user holding every permission, or none."""

    def __init__(self, allowed: bool) -> None:
        self.allowed = allowed

    def has_perm(self, permission: str) -> bool:
        return self.allowed


def _seen(allowed: bool) -> Seen:
    return Seen(
        user=Operator(allowed),
        site="admin",
        jobs_url=lambda problem: f"/admin/litejobs/job/?ids={problem.job_ids[0]}",
        queues={"mail": {"ready_url": "/admin/litejobs/job/?queue=mail", "reason": "SPF."}},
        max_ready_age="5m",
    )


def _found(code: str) -> Problem:
    details = {"where": "mail", "count": 3, "job_ids": (7, 8), "schedules": ("nightly",)}
    if code in NOTES:
        return note(code, f"`manage.py litejobs {code}`", **details)
    return Problem(code, f"`manage.py litejobs {code}`", **details)


@pytest.mark.parametrize("code", sorted({*runbooks(), *NOTES} - UNDRAWN))
def test_every_code_is_said_in_words_with_an_action_only_for_who_may_take_it(code):
    remedy = problems.worded(_found(code), _seen(allowed=True))
    assert "`" not in remedy.text and "manage.py" not in remedy.text
    assert "(s)" not in remedy.text
    assert remedy.actions, code  # a button or a link to the page that acts
    refused = problems.worded(_found(code), _seen(allowed=False))
    assert refused.text == remedy.text and refused.actions == []
