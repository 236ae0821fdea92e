"""What the dashboard's "Needs an operator" says about each of ``doctor``'s problems and notes:
in words, with the admin's own action beside it (a Retry or Resume button, a link to the page
that acts), where ``doctor`` itself names command lines.

``worded`` answers a ``Remedy`` per problem: its sentence and the actions this user may take
(a button or link they may not follow is not offered). A code this module does not know keeps
``doctor``'s message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse
from django.utils.translation import ngettext

from ..core.diagnostics import Problem

__all__ = ["RESUMED", "Action", "Remedy", "Seen", "worded"]

#: The reason the operator action log records for a queue resumed from the dashboard.
RESUMED = "resumed from the dashboard"


@dataclass(frozen=True)
class Action:
    """A link, or (with ``post``: the form's fields, name and value) a button posting to
    ``url``."""

    label: str
    url: str
    post: tuple[tuple[str, str], ...] = ()
    #: The link's class, when it is not a plain action (``problem-jobs``: the jobs it names).
    kind: str = ""


@dataclass(frozen=True)
class Remedy:
    """One problem as the dashboard shows it."""

    code: str
    text: str
    actions: list[Action] = field(default_factory=list)
    note: bool = False


@dataclass(frozen=True)
class Seen:
    """What the remedies read: who looks (their permissions), the admin site, the link to a
    problem's jobs (``jobs_url``: the dashboard's), the queue rows (by name) and the
    threshold a backlog is measured against."""

    user: Any
    site: str
    jobs_url: Callable[[Problem], str]
    queues: Mapping[str, Mapping[str, Any]]
    max_ready_age: str

    def may(self, permission: str) -> bool:
        return bool(self.user.has_perm(f"litejobs.{permission}"))

    def url(self, name: str, *args: Any, query: Mapping[str, str] | None = None) -> str:
        found = reverse(f"{self.site}:litejobs_{name}", args=args)
        return f"{found}?{urlencode(query)}" if query else found


def worded(problem: Problem, seen: Seen) -> Remedy:
    """The dashboard's words and actions for ``problem``."""
    words = WORDS.get(problem.code)
    if words is None:
        return Remedy(problem.code, problem.message, note=problem.is_note)
    text, actions = words(problem, seen)
    return Remedy(problem.code, text, [a for a in actions if a is not None], problem.is_note)


Worded = tuple[str, list[Action | None]]


def _jobs(n: int) -> str:
    return ngettext("%(n)d job", "%(n)d jobs", n) % {"n": n}


def _list_jobs(problem: Problem, seen: Seen) -> Action | None:
    if not problem.job_ids or not seen.may("view_job"):
        return None
    shown = len(problem.job_ids)
    if shown < problem.count:
        label = f"List the newest {shown}" if shown > 1 else "List the newest job"
    else:
        label = f"List the {_jobs(shown)}" if shown > 1 else "List the job"
    return Action(label, seen.jobs_url(problem), kind="problem-jobs")


def _dead_jobs(problem: Problem, seen: Seen) -> Worded:
    n = problem.count
    text = (
        ngettext("%(jobs)s died", "%(jobs)s died", n)
        % {"jobs": _jobs(n)}
        + " in the last day: their attempts ran out or they met a permanent error. Read the "
        "error on a job's page, fix its cause, then retry them."
    )
    retry = None
    if problem.job_ids and seen.may("change_job"):
        shown = len(problem.job_ids)
        label = "Retry them" if shown == n else f"Retry the {shown} newest"
        retry = Action(
            label if n > 1 else "Retry it",
            seen.url("job_changelist"),
            (
                ("action", "retry_jobs"),
                ("index", "0"),
                *(("_selected_action", str(job_id)) for job_id in problem.job_ids),
            ),
        )
    return text, [_list_jobs(problem, seen), retry]


def _held_for_operator(problem: Problem, seen: Seen) -> Worded:
    text = (
        ngettext("%(jobs)s is held", "%(jobs)s are held", problem.count)
        % {"jobs": _jobs(problem.count)}
        + " for an operator: a step that must run at most once was started, but its worker "
        "stopped before recording whether it took effect, so it is not run again blindly. "
        "Check whether it did, then settle it as its job's page says."
    )
    return text, [_list_jobs(problem, seen)]


def _lease_lapsed(problem: Problem, seen: Seen) -> Worded:
    n = problem.count
    text = (
        ngettext(
            "%(n)d running job holds a lease that lapsed",
            "%(n)d running jobs hold leases that lapsed",
            n,
        )
        % {"n": n}
        + ": their worker stopped renewing it (it crashed, was killed or lost the database). "
        "A live worker takes them back at its next heartbeat and runs them again; if no worker "
        "is live (see Live workers below), start one."
    )
    return text, [_list_jobs(problem, seen)]


def _unknown_job(problem: Problem, seen: Seen) -> Worded:
    text = (
        ngettext("%(jobs)s waits", "%(jobs)s wait", problem.count)
        % {"jobs": _jobs(problem.count)}
        + " for a worker whose code can run them: the workers that claimed them run an older "
        "release. Deploy the release that declares them to every worker; a job no worker takes "
        "within UNKNOWN_JOB_GRACE goes dead."
    )
    return text, [_list_jobs(problem, seen)]


def _queue_link(problem: Problem, seen: Seen, label: str) -> Action | None:
    row = seen.queues.get(problem.where)
    if row is None or not row.get("ready_url") or not seen.may("view_job"):
        return None
    return Action(label, row["ready_url"])


def _ready_backlog(problem: Problem, seen: Seen) -> Worded:
    row = seen.queues.get(problem.where, {})
    oldest = f", the oldest for {row['oldest_due']}" if row.get("oldest_due") else ""
    text = (
        f"Queue {problem.where}: {_jobs(problem.count)} due{oldest}, longer than "
        f"{seen.max_ready_age}. Add workers or threads, or look for slow jobs holding the "
        "workers (Live workers below)."
    )
    return text, [_queue_link(problem, seen, "List its ready jobs")]


def _no_worker(problem: Problem, seen: Seen) -> Worded:
    text = (
        f"Queue {problem.where}: {_jobs(problem.count)} due and no live worker serves it. Start "
        "a worker for every queue, or one for this queue."
    )
    workers = Action("Workers", seen.url("worker_changelist")) if seen.may("view_worker") else None
    return text, [_queue_link(problem, seen, "List its ready jobs"), workers]


def _queue_paused(problem: Problem, seen: Seen) -> Worded:
    row = seen.queues.get(problem.where, {})
    by = f" by {row['changed_by']}" if row.get("changed_by") else ""
    since = f" since {row['changed_at']}" if row.get("changed_at") else ""
    reason = f": {row['reason'].rstrip('. ')}" if row.get("reason") else " (no reason given)"
    due = ngettext("%(n)d due job waits", "%(n)d due jobs wait", problem.count) % {
        "n": problem.count
    }
    text = f"Queue {problem.where} is paused{since}{by}{reason}. {due} for it to resume."
    resume: Action | None = None
    if seen.may("change_queuestate"):
        resume = Action(
            "Resume",
            seen.url("queuestate_changelist"),
            (("action", "resume"), ("queue", problem.where), ("reason", RESUMED)),
        )
    elif seen.may("view_queuestate"):
        resume = Action("Queues", seen.url("queuestate_changelist"))
    return text, [resume]


def _schedules(problem: Problem, seen: Seen) -> list[Action | None]:
    if not seen.may("view_schedule"):
        return []
    return [
        Action(f"Open {name}", seen.url("schedule_changelist", query={"q": name}))
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
    listed = Action("Schedules", seen.url("schedule_changelist"))
    return text, [listed if seen.may("view_schedule") else None]


def _schedule_disabled(problem: Problem, seen: Seen) -> Worded:
    names = ", ".join(problem.schedules)
    return (
        f"Schedule {names} is disabled: nothing is planned until it is enabled again (Enable "
        "is on its page).",
        _schedules(problem, seen),
    )


def _schedule_draft(problem: Problem, seen: Seen) -> Worded:
    names = ", ".join(problem.schedules)
    return (
        f"Schedule {names} is still a draft past its decide-by date: decide, then make it "
        "active or remove it.",
        _schedules(problem, seen),
    )


def _outbox_backlog(problem: Problem, seen: Seen) -> Worded:
    n = problem.count
    text = (
        ngettext("%(n)d outbox message waits", "%(n)d outbox messages wait", n) % {"n": n}
        + " to be published"
        + f", the oldest longer than {seen.max_ready_age}. Check that a worker with its relay, "
        "or a relay, runs; its log names a message it cannot publish."
    )
    listed = Action("List them", seen.url("outboxmessage_changelist", query={"state": "pending"}))
    return text, [listed if seen.may("view_outboxmessage") else None]


def _endpoint(problem: Problem, seen: Seen) -> Action | None:
    if not problem.where or not seen.may("view_webhookendpoint"):
        return None
    return Action("Open the endpoint", seen.url("webhookendpoint_change", problem.where))


def _webhook_disabled(problem: Problem, seen: Seen) -> Worded:
    return (
        f"Webhook endpoint {problem.where} was disabled after failing again and again: its "
        "events are not delivered. Enable it on its page once the receiver works.",
        [_endpoint(problem, seen)],
    )


def _endpoint_disabled(problem: Problem, seen: Seen) -> Worded:
    return (
        f"Webhook endpoint {problem.where} is disabled by an operator: its events are not "
        "delivered until it is enabled on its page.",
        [_endpoint(problem, seen)],
    )


def _pipeline(problem: Problem, seen: Seen) -> Action | None:
    if not problem.where or not seen.may("view_ingestcount"):
        return None
    return Action("Open the pipeline", seen.url("ingestcount_pipeline", problem.where))


def _ingest_backlog(problem: Problem, seen: Seen) -> Worded:
    return (
        f"Pipeline {problem.where}: {problem.count} records wait in its buffer longer than "
        "its freshness allows. Check that a worker serves the ingest queue and that the "
        "pipeline's drain job is not failing.",
        [_pipeline(problem, seen)],
    )


def _ingest_over_capacity(problem: Problem, seen: Seen) -> Worded:
    return (
        f"Pipeline {problem.where}: {problem.count} records buffered, over its capacity. Run "
        "more workers for the ingest queue, or find why its drain is slow.",
        [_pipeline(problem, seen)],
    )


def _ingest_import_stopped(problem: Problem, seen: Seen) -> Worded:
    return (
        f"A file import through {problem.where} is unfinished and its job ended: nothing "
        "carries it on. Read the job's error, fix the cause, then retry the job: the import "
        "resumes where it stopped.",
        [_pipeline(problem, seen)],
    )


#: The dashboard's words for each code ``doctor`` answers.
WORDS: dict[str, Callable[[Problem, Seen], Worded]] = {
    "held-for-operator": _held_for_operator,
    "dead-jobs": _dead_jobs,
    "lease-lapsed": _lease_lapsed,
    "unknown-job": _unknown_job,
    "ready-backlog": _ready_backlog,
    "no-worker": _no_worker,
    "queue-paused": _queue_paused,
    "overdue-schedule": _overdue_schedule,
    "no-scheduler": _no_scheduler,
    "schedule-disabled": _schedule_disabled,
    "schedule-draft-overdue": _schedule_draft,
    "outbox-backlog": _outbox_backlog,
    "webhook-disabled": _webhook_disabled,
    "webhook-endpoint-disabled": _endpoint_disabled,
    "ingest-backlog": _ingest_backlog,
    "ingest-over-capacity": _ingest_over_capacity,
    "ingest-import-stopped": _ingest_import_stopped,
}
