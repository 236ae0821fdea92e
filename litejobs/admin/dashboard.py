"""The litejobs admin index as an operator's dashboard: every queue's jobs per state, what
settled in the last hour and day with its latency, the live workers and what they run, and
what needs an operator with the fix beside it.

The charts read the per-minute counters (``litejobs.jobs.minutes``), never the job table; the
queue table is one GROUP BY over live and dead jobs (``queues.queue_overview``), the problems
``doctor``'s own (``litejobs.doctor.diagnose``). The page is drawn by the template tag
``litejobs_dashboard`` in ``admin/litejobs/app_index.html`` and reloads its dashboard part
(``litejobs/dashboard.js``, no framework): at once when its websocket says something changed
(``litejobs.live``, with ``litejobs[live]``), else every ``REFRESH_SECONDS``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.urls import reverse

from ..conf import settings
from ..core import clock, times
from ..core.diagnostics import Problem
from ..core.durations import format_age
from ..core.enums import JobState, MinuteOutcome
from ..core.remedies import Seen
from ..doctor import diagnose
from ..jobs import minutes, queues
from ..jobs.remedies import RESUMED
from ..live.watcher import websocket_path
from ..models import Job, Worker
from . import charts, problems
from .joblisting import listing_url

#: How often the page reloads its dashboard part without its websocket.
REFRESH_SECONDS = 5
#: A due job waiting longer is a backlog (as ``doctor``'s default).
MAX_READY_AGE = timedelta(minutes=5)
#: The states counted per queue. ``waiting`` is a job parked by a durable sleep or an event
#: wait (not claimable until its time or event comes); a failed job waiting for its retry is
#: counted under ``failed``.
BOARD_STATES = (
    JobState.READY,
    JobState.SCHEDULED,
    JobState.RUNNING,
    JobState.WAITING,
    JobState.FAILED,
    JobState.DEAD,
)
#: How settled jobs are drawn, bottom up: in words, in a colour that says what they are (green
#: for done only; dead never green), and what one of them counts. A job ends done, dead or
#: cancelled once (jobs), but may fail or lapse at every attempt (events).
OUTCOMES = {
    MinuteOutcome.DONE: ("done", charts.GREEN, "job"),
    MinuteOutcome.FAILED: ("failed, retry pending", "#E69F00", "event"),
    MinuteOutcome.DEAD: ("dead", charts.VERMILLION, "job"),
    MinuteOutcome.LAPSED: ("lease lapsed", "#CC79A7", "event"),
    MinuteOutcome.CANCELLED: ("cancelled", "#999999", "job"),
}
#: The words an outcome's count is told in.
COUNTED = {words: unit for words, _, unit in OUTCOMES.values()}
#: In-flight jobs shown at most (the oldest first).
IN_FLIGHT_SHOWN = 200


@dataclass(frozen=True)
class Window:
    """A chart's span: ``count`` periods of ``step``, ending with the current one."""

    name: str
    step: timedelta
    count: int
    label: Callable[[datetime], str]
    short: Callable[[datetime], str]
    label_every: int

    def span(self, now: datetime) -> tuple[datetime, datetime]:
        """The first period's start and the last one's end (the current period included)."""
        seconds = int(self.step.total_seconds())
        current = datetime.fromtimestamp(int(now.timestamp()) // seconds * seconds, tz=now.tzinfo)
        end = current + self.step
        return end - self.step * self.count, end


WINDOWS = (
    Window(
        "last hour, per minute",
        timedelta(minutes=1),
        60,
        lambda at: f"{at:%H:%M}",
        lambda at: f"{at:%H:%M}",
        10,
    ),
    Window(
        "last day, per hour",
        timedelta(hours=1),
        24,
        lambda at: f"{at:%b %d %H:00}",
        lambda at: f"{at:%H:00}",
        4,
    ),
)


def dashboard(site_name: str, user: Any) -> dict[str, Any]:
    """Everything the dashboard shows ``user``, as template context (a bounded number of
    queries); links and buttons only where ``user`` may follow them."""
    now = clock.now()
    jobs_url = reverse(f"{site_name}:litejobs_job_changelist")
    rows = _queues(now, jobs_url)
    seen = Seen(
        user=user,
        site=site_name,
        jobs_url=lambda problem: _problem_jobs(problem, jobs_url),
        queues={row["name"]: row for row in rows},
        max_ready_age=format_age(MAX_READY_AGE),
    )
    return {
        "now": now,
        "now_shown": times.when(now, now),
        "now_full": times.full(now),
        "states": [state.label for state in BOARD_STATES],
        "queues": rows,
        "charts": [chart for window in WINDOWS for chart in _charts(window, now)],
        "workers": _workers(site_name, user),
        "problems": _problems(now, seen),
        "may_resume": user.has_perm("litejobs.change_queuestate"),
        "resumed": RESUMED,
        "queues_url": reverse(f"{site_name}:litejobs_queuestate_changelist"),
        "refresh_seconds": REFRESH_SECONDS,
        "live_path": websocket_path(),
    }


def _queues(now: datetime, jobs_url: str) -> list[dict[str, Any]]:
    rows = []
    for summary in queues.queue_overview(now=now, states=BOARD_STATES):
        counts = [
            (summary.counts[state.value], listing_url(jobs_url, queue=summary.name, state=state))
            for state in BOARD_STATES
        ]
        changed = summary.changed_at
        rows.append(
            {
                "name": summary.name,
                "counts": counts,
                "ready_url": counts[0][1],
                "paused": summary.paused,
                "reason": summary.reason,
                "changed_by": summary.changed_by,
                "changed_at": (
                    f"{times.when(changed, now)} ({times.ago(changed, now)})" if changed else ""
                ),
                "oldest_due": (
                    format_age(summary.oldest_due_age) if summary.oldest_due_age is not None else ""
                ),
                "due": summary.due,
            }
        )
    return rows


def _seconds(value: float) -> str:
    """Seconds as people read them: ``0``, ``35ms``, ``2.5s``, ``4m 10s``."""
    if value == 0:
        return "0"
    if value < 1:
        return f"{value * 1000:.0f}ms"
    if value < 60:
        return f"{value:.1f}s".replace(".0s", "s")
    return format_age(timedelta(seconds=value))


def _charts(window: Window, now: datetime) -> list[dict[str, Any]]:
    start, end = window.span(now)
    found = minutes.periods(start=start, end=end, step=window.step)
    labels = [window.label(period.start) for period in found]
    shorts = [window.short(period.start) for period in found]
    settled = charts.stacked_bars(
        [
            (label, {OUTCOMES[o][0]: period.counts.get(o, 0) for o in OUTCOMES})
            for label, period in zip(labels, found, strict=True)
        ],
        [words for words, _, _ in OUTCOMES.values()],
        title=f"Jobs settled, {window.name}",
        short_labels=shorts,
        label_every=window.label_every,
        colors={words: color for words, color, _ in OUTCOMES.values()},
        counted=_counted,
    )
    latency = charts.lines(
        [
            (label, {"p50": period.latency_quantile(0.5), "p95": period.latency_quantile(0.95)})
            for label, period in zip(labels, found, strict=True)
        ],
        ["p50", "p95"],
        title=f"Wait from due to start, {window.name}",
        fmt=_seconds,
        short_labels=shorts,
        label_every=window.label_every,
        scale=charts.duration_top,
    )
    slug = window.name.split(",")[0].replace(" ", "-")
    return [
        {"chart": settled, "id": f"settled-{slug}", "template": "admin/litejobs/chart.html"},
        {"chart": latency, "id": f"latency-{slug}", "template": "admin/litejobs/line_chart.html"},
    ]


def _counted(outcome: str, count: int) -> str:
    """``12 jobs``, ``1 event``: what a count of ``outcome`` counts."""
    unit = COUNTED[outcome]
    return f"{count} {unit}{'' if count == 1 else 's'}"


def _workers(site_name: str, user: Any) -> list[dict[str, Any]]:
    lease_now = clock.database_now(settings.DATABASE)
    workers = list(
        Worker.objects.using(settings.DATABASE)
        .filter(lease_expires_at__gt=lease_now)
        .order_by("host", "pid")
    )
    ids = {job_id for worker in workers for job_id in (worker.in_flight or [])}
    held = (
        Job.objects.using(settings.DATABASE)
        .filter(pk__in=ids, state=JobState.RUNNING)
        .only("id", "name", "queue", "started_at", "lease_owner")
        .order_by("started_at")[:IN_FLIGHT_SHOWN]
    )
    by_owner: dict[str, list[Job]] = {}
    for job in held if ids else ():
        by_owner.setdefault(job.lease_owner or "", []).append(job)
    now = clock.now()
    may_view = user.has_perm("litejobs.view_worker")
    return [
        {
            "worker": worker,
            "url": (
                reverse(f"{site_name}:litejobs_worker_change", args=[worker.pk]) if may_view else ""
            ),
            "queues": ", ".join(worker.queues) if worker.queues else "all",
            "jobs": [
                {
                    "job": job,
                    "url": reverse(f"{site_name}:litejobs_job_change", args=[job.pk]),
                    "running_for": format_age(now - job.started_at) if job.started_at else "",
                }
                for job in by_owner.get(worker.pk, [])
            ],
            "in_flight": len(worker.in_flight or []),
        }
        for worker in workers
    ]


def _problems(now: datetime, seen: Seen) -> list[problems.Remedy]:
    """``doctor``'s problems, then its notes, each in the dashboard's words with its actions."""
    diagnosis = diagnose(max_ready_age=MAX_READY_AGE, now=now)
    return [problems.worded(problem, seen) for problem in (*diagnosis.problems, *diagnosis.noted)]


def _problem_jobs(problem: Problem, jobs_url: str) -> str:
    """The job list of the jobs a problem names (the newest ones when it names fewer than it
    counts), through the listing's ids filter, which the bulk action over a filter accepts."""
    return listing_url(jobs_url, ids=problem.job_ids) if problem.job_ids else ""
