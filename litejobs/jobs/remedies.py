"""The dashboard's words and actions for the job queue's problems (``Feature.words``): jobs
held, dead, lapsed or unknown, with a Retry button and a link to them; queues backed up, with
no worker, or paused, with a Resume button."""

from __future__ import annotations

from django.utils.translation import ngettext

from ..core.diagnostics import Problem
from ..core.remedies import Action, Seen, Worded, Words

#: The reason the operator action log records for a queue resumed from the dashboard.
RESUMED = "resumed from the dashboard"


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
    workers = seen.link("Workers", "view_worker", "worker_changelist")
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
    if not seen.may("change_queuestate"):
        return text, [seen.link("Queues", "view_queuestate", "queuestate_changelist")]
    resume = Action(
        "Resume",
        seen.url("queuestate_changelist"),
        (("action", "resume"), ("queue", problem.where), ("reason", RESUMED)),
    )
    return text, [resume]


#: The dashboard's words for each code of the jobs' and queues' problems.
WORDS: dict[str, Words] = {
    "held-for-operator": _held_for_operator,
    "dead-jobs": _dead_jobs,
    "lease-lapsed": _lease_lapsed,
    "unknown-job": _unknown_job,
    "ready-backlog": _ready_backlog,
    "no-worker": _no_worker,
    "queue-paused": _queue_paused,
}
