"""``manage.py litejobs workers|queues``: what runs the jobs, and where the jobs wait.

``workers`` lists the live workers (lease not lapsed, judged on the database's clock as the
workers judge it) and those gone within ``GONE_WINDOW``, with what each runs; ``queues`` lists
every queue's job counts per state, its switch and how long its oldest due job has waited.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..conf import settings
from ..core import clock
from ..core.durations import format_age
from ..jobs import queues
from ..models import Worker
from . import EXIT_OK, add_json_flag, emit
from .jobs import iso, table

if TYPE_CHECKING:
    from django.core.management.base import BaseCommand

    from . import Subparsers

#: How long a worker whose lease lapsed is still listed (as gone).
GONE_WINDOW = timedelta(hours=1)


def register(subparsers: Subparsers) -> None:
    """Add ``workers`` and ``queues``."""
    parser = subparsers.add_parser(
        "workers", help="Live workers (and those gone in the last hour) and what each runs."
    )
    add_json_flag(parser)
    parser.set_defaults(handler=handle_workers)

    parser = subparsers.add_parser(
        "queues", help="Every queue: job counts by state, paused (by whom, why), oldest due job."
    )
    add_json_flag(parser)
    parser.set_defaults(handler=handle_queues)


def _worker(row: Worker, lease_now: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "host": row.host,
        "pid": row.pid,
        "queues": list(row.queues or []),
        "concurrency": row.concurrency,
        "started_at": iso(row.started_at),
        "last_heartbeat": iso(row.last_heartbeat),
        "lease_expires_at": iso(row.lease_expires_at),
        "in_flight": list(row.in_flight or []),
        "stopping": row.stopping,
        "alive": row.lease_expires_at > lease_now,
    }


def handle_workers(command: BaseCommand, options: dict[str, Any]) -> int:
    """Print the live and recently gone workers, live ones first."""
    lease_now = clock.database_now(settings.DATABASE)
    rows = [
        _worker(row, lease_now)
        for row in Worker.objects.using(settings.DATABASE)
        .filter(lease_expires_at__gt=lease_now - GONE_WINDOW)
        .order_by("host", "pid")
    ]
    rows.sort(key=lambda row: not row["alive"])
    text = table(
        [
            [
                row["host"],
                row["pid"],
                ("stopping" if row["stopping"] else "alive") if row["alive"] else "gone",
                ",".join(row["queues"]) or "(all)",
                row["concurrency"],
                row["last_heartbeat"],
                ",".join(map(str, row["in_flight"])) or "-",
            ]
            for row in rows
        ],
        ["host", "pid", "status", "queues", "concurrency", "heartbeat", "in-flight jobs"],
    )
    emit(command, options, rows, text if rows else "No worker is alive or gone in the last hour.")
    return EXIT_OK


def handle_queues(command: BaseCommand, options: dict[str, Any]) -> int:
    """Print every queue with its counts per state, its switch and its oldest due job's age."""
    summaries = queues.queue_overview()
    states = [state.value for state in queues.OVERVIEW_STATES]
    text = table(
        [
            [
                s.name,
                *(s.counts[state] for state in states),
                format_age(s.oldest_due_age) if s.oldest_due_age is not None else "-",
                f"paused by {s.changed_by or 'unknown'}: {s.reason}" if s.paused else "running",
            ]
            for s in summaries
        ],
        ["queue", *states, "oldest due", "switch"],
    )
    data = [summary.as_dict() for summary in summaries]
    emit(command, options, data, text if summaries else "No queue has jobs or a declaration.")
    return EXIT_OK
