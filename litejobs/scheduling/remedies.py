"""The dashboard's words and actions for schedules' problems (``Feature.words``), each with
a link to the schedule's page."""

from __future__ import annotations

from django.utils.translation import ngettext

from ..core.diagnostics import Problem
from ..core.remedies import Action, Seen, Worded, Words


def _schedules(problem: Problem, seen: Seen) -> list[Action | None]:
    return [
        seen.link(f"Open {name}", "view_schedule", "schedule_changelist", query={"q": name})
        for name in problem.schedules
    ]


def _overdue_schedule(problem: Problem, seen: Seen) -> Worded:
    n = problem.count
    text = (
        ngettext(
            "%(n)d schedule has no successful occurrence",
            "%(n)d schedules have no successful occurrence",
            n,
        )
        % {"n": n}
        + " within their period plus grace. Check that a scheduler and a worker run, then read "
        "the failed occurrences on the schedule's page (Replay is there)."
    )
    return text, _schedules(problem, seen)


def _no_scheduler(problem: Problem, seen: Seen) -> Worded:
    text = (
        ngettext("%(n)d active schedule", "%(n)d active schedules", problem.count)
        % {"n": problem.count}
        + " but no scheduler holds the leader lease: nothing plans their occurrences. Start a "
        "scheduler (two or more, for failover)."
    )
    return text, [seen.link("Schedules", "view_schedule", "schedule_changelist")]


def _named(says: str) -> Words:
    """Words saying ``says`` of the problem's schedules (``{names}``), with a link to each."""

    def words(problem: Problem, seen: Seen) -> Worded:
        return says.format(names=", ".join(problem.schedules)), _schedules(problem, seen)

    return words


#: The dashboard's words for each code of the schedules' problems.
WORDS: dict[str, Words] = {
    "overdue-schedule": _overdue_schedule,
    "no-scheduler": _no_scheduler,
    "schedule-disabled": _named(
        "Schedule {names} is disabled: nothing is planned until it is enabled again (Enable is "
        "on its page)."
    ),
    "schedule-draft-overdue": _named(
        "Schedule {names} is still a draft past its decide-by date: decide, then make it "
        "active or remove it."
    ),
}
