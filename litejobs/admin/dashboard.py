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
from ..doctor import diagnose
from ..jobs import minutes, queues
from ..live.watcher import websocket_path
from ..models import Job, Worker
from . import charts
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
#: How settled jobs are drawn, bottom up, in words.
OUTCOMES = {
    MinuteOutcome.DONE: "done",
    MinuteOutcome.FAILED: "failed, retry pending",
    MinuteOutcome.DEAD: "dead",
    MinuteOutcome.LAPSED: "lease lapsed",
    MinuteOutcome.CANCELLED: "cancelled",
}
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


def dashboard(site_name: str) -> dict[str, Any]:
    """Everything the dashboard shows, as template context (a bounded number of queries)."""
    now = clock.now()
    jobs_url = reverse(f"{site_name}:litejobs_job_changelist")
    return {
        "now": now,
        "now_shown": times.when(now, now),
        "states": [state.label for state in BOARD_STATES],
        "queues": _queues(now, jobs_url),
        "charts": [chart for window in WINDOWS for chart in _charts(window, now)],
        "workers": _workers(site_name),
        "problems": _problems(now, jobs_url),
        "refresh_seconds": REFRESH_SECONDS,
        "live_path": websocket_path(),
    }


def _queues(now: datetime, jobs_url: str) -> list[dict[str, Any]]:
    return [
        {
            "name": summary.name,
            "counts": [
                (
                    summary.counts[state.value],
                    listing_url(jobs_url, queue=summary.name, state=state),
                )
                for state in BOARD_STATES
            ],
            "paused": summary.paused,
            "reason": summary.reason,
            "oldest_due": (
                format_age(summary.oldest_due_age) if summary.oldest_due_age is not None else ""
            ),
            "due": summary.due,
        }
        for summary in queues.queue_overview(now=now, states=BOARD_STATES)
    ]


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
            (label, {OUTCOMES[o]: period.counts.get(o, 0) for o in OUTCOMES})
            for label, period in zip(labels, found, strict=True)
        ],
        list(OUTCOMES.values()),
        title=f"Jobs settled, {window.name}",
        short_labels=shorts,
        label_every=window.label_every,
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
    )
    slug = window.name.split(",")[0].replace(" ", "-")
    return [
        {"chart": settled, "id": f"settled-{slug}", "template": "admin/litejobs/chart.html"},
        {"chart": latency, "id": f"latency-{slug}", "template": "admin/litejobs/line_chart.html"},
    ]


def _workers(site_name: str) -> list[dict[str, Any]]:
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
    return [
        {
            "worker": worker,
            "url": reverse(f"{site_name}:litejobs_worker_change", args=[worker.pk]),
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


def _problems(now: datetime, jobs_url: str) -> list[dict[str, Any]]:
    diagnosis = diagnose(max_ready_age=MAX_READY_AGE, now=now)
    return [_problem(problem, jobs_url) for problem in diagnosis.problems] + [
        {"code": "", "message": message, "url": "", "count": 0, "note": True}
        for message in diagnosis.notes
    ]


def _problem(problem: Problem, jobs_url: str) -> dict[str, Any]:
    """A problem, linked to the jobs it names (the newest ones when it names fewer than it
    counts), through the listing's ids filter, which the bulk action over a filter accepts."""
    ids = problem.job_ids
    return {
        "code": problem.code,
        "message": problem.message,
        "count": len(ids),
        "newest": len(ids) < problem.count,
        "url": listing_url(jobs_url, ids=ids) if ids else "",
        "note": False,
    }
