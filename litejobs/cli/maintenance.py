"""``manage.py litejobs purge|doctor``: retention, and a health check for cron and alerts.

``doctor`` exits 3 when it finds a problem (0 when healthy), so a cron job or a monitoring
probe can alert on the exit code alone and read ``--json`` for the details.
"""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from .. import doctor
from ..core.durations import parse_duration
from ..exceptions import InvalidInput
from ..jobs import retention
from ..outbox import operations as outbox_operations
from . import EXIT_OK, EXIT_PROBLEMS, add_json_flag, emit
from .jobs import acting_user, add_by_flag, add_reason_flag

if TYPE_CHECKING:
    from django.core.management.base import BaseCommand

    from . import Subparsers

DEFAULT_MAX_READY_AGE = "5m"


def _duration(value: str) -> timedelta:
    try:
        return parse_duration(value, name="--max-ready-age", allow_zero=False)
    except InvalidInput as error:
        raise argparse.ArgumentTypeError(error.args[0]) from error


def register(subparsers: Subparsers) -> None:
    """Add ``purge`` and ``doctor``."""
    parser = subparsers.add_parser(
        "purge",
        help="Delete finished jobs older than their retention (LITEJOBS['RETENTION']) and "
        "published outbox messages and finished webhook deliveries (OUTBOX_RETENTION).",
    )
    add_by_flag(parser)
    add_reason_flag(parser)
    add_json_flag(parser)
    parser.set_defaults(handler=handle_purge)

    parser = subparsers.add_parser(
        "doctor",
        help="List problems (dead jobs, lapsed leases, backlogs, overdue schedules); exit 3 if "
        "any.",
    )
    parser.add_argument(
        "--max-ready-age",
        type=_duration,
        default=_duration(DEFAULT_MAX_READY_AGE),
        help=f"A due job waiting longer is a backlog (default {DEFAULT_MAX_READY_AGE}).",
    )
    add_json_flag(parser)
    parser.set_defaults(handler=handle_doctor)


def handle_purge(command: BaseCommand, options: dict[str, Any]) -> int:
    """``purge``: see ``jobs.retention.purge`` and ``outbox.operations.purge``; prints the
    rows deleted."""
    by = acting_user(options)
    counts = retention.purge(by=by, reason=options["reason"])
    published = outbox_operations.purge(by=by)
    text = "Purged " + ", ".join(f"{n} {state}" for state, n in counts.items()) + " job(s)"
    text += f", {published['messages']} outbox message(s), {published['deliveries']} webhook "
    text += "delivery record(s)."
    data = {"deleted": counts, "total": sum(counts.values()), "outbox": published}
    emit(command, options, data, text)
    return EXIT_OK


def handle_doctor(command: BaseCommand, options: dict[str, Any]) -> int:
    """``doctor``: print every problem with what to do; exit 3 if there is any."""
    diagnosis = doctor.diagnose(max_ready_age=options["max_ready_age"])
    lines = []
    for problem in diagnosis.problems:
        ids = f" (jobs {', '.join(map(str, problem.job_ids))})" if problem.job_ids else ""
        lines.append(f"[{problem.code}] {problem.message}{ids}")
    lines.extend(f"note: {note}" for note in diagnosis.notes)
    lines.append("healthy" if diagnosis.healthy else f"{len(diagnosis.problems)} problem(s) found")
    emit(command, options, diagnosis.as_dict(), "\n".join(lines))
    return EXIT_OK if diagnosis.healthy else EXIT_PROBLEMS
