"""``manage.py litejobs schedule list|show``, ``replay``, ``disable``, ``enable``, ``run-manual``.

The operator's verbs on schedules from the command line; every verb calls
``litejobs.scheduling.operations`` (or ``scheduling.manual``), the functions the admin's
actions call too. A refusal prints ``[code] message`` and exits 1.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from ..cli import EXIT_OK, add_json_flag, emit
from ..cli.jobs import acting_user, add_by_flag, add_reason_flag, iso, row_id, table
from ..core import clock
from ..core.durations import format_seconds
from ..core.enums import ScheduleStatus
from . import health, manual, operations

if TYPE_CHECKING:
    from django.core.management.base import BaseCommand

    from ..cli import Subparsers


def _json_object(value: str) -> dict[str, Any]:
    try:
        data = json.loads(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"--args must be a JSON object: {error}") from error
    if not isinstance(data, dict):
        raise argparse.ArgumentTypeError("--args must be a JSON object such as '{\"day\": 3}'")
    return data


def register(subparsers: Subparsers) -> None:
    """Add the schedule verbs."""
    parser = subparsers.add_parser("schedule", help="Inspect schedules (list, show NAME).")
    verbs = parser.add_subparsers(dest="schedule_verb", metavar="list|show", required=True)
    listing = verbs.add_parser("list", help="Every schedule: switch, next run, last success.")
    add_json_flag(listing)
    listing.set_defaults(handler=handle_list)
    show = verbs.add_parser(
        "show", help="A schedule's declaration, health, recent occurrences and runbook."
    )
    show.add_argument("name")
    add_json_flag(show)
    show.set_defaults(handler=handle_show)

    parser = subparsers.add_parser(
        "replay", help="Run an occurrence again under its identity (audited; needs --reason)."
    )
    parser.add_argument("occurrence", type=row_id("occurrence"))
    parser.add_argument("--reason", required=True, help="Why (kept in the audit record).")
    add_by_flag(parser)
    add_json_flag(parser)
    parser.set_defaults(handler=handle_replay)

    parser = subparsers.add_parser(
        "disable", help="Stop a schedule planning occurrences (a claimed one finishes)."
    )
    parser.add_argument("name")
    parser.add_argument("--reason", required=True, help="Why (shown in the admin and doctor).")
    add_by_flag(parser)
    add_json_flag(parser)
    parser.set_defaults(handler=handle_disable)

    parser = subparsers.add_parser("enable", help="Let a disabled schedule plan again, from now.")
    parser.add_argument("name")
    add_reason_flag(parser)
    add_by_flag(parser)
    add_json_flag(parser)
    parser.set_defaults(handler=handle_enable)

    parser = subparsers.add_parser(
        "run-manual", help="Run a manual job now, if its runs_where and guard allow you."
    )
    parser.add_argument("name")
    parser.add_argument("--reason", required=True, help="Why it runs (logged).")
    parser.add_argument(
        "--args",
        dest="arguments",  # not "args": Django's command machinery owns that option name
        type=_json_object,
        default=None,
        help="The job's arguments as a JSON object.",
    )
    add_by_flag(parser)
    add_json_flag(parser)
    parser.set_defaults(handler=handle_run_manual)


def handle_list(command: BaseCommand, options: dict[str, Any]) -> int:
    """``schedule list``: every schedule row with its switch and health."""
    now = clock.now()
    states = health.all_health(now)
    data = [
        {
            "name": s.row.name,
            "timetable": operations.describe_timetable(s.row),
            "status": s.row.status,
            "enabled": s.row.enabled,
            "declared": s.row.declared,
            "next_run": iso(s.health.next_runs[0]) if s.health.next_runs else None,
            "last_success_at": iso(s.row.last_success_at),
            "overdue": s.health.overdue,
        }
        for s in states
    ]
    text = table(
        [
            [
                row["name"],
                row["status"] if row["enabled"] else "disabled",
                row["next_run"] or "-",
                row["last_success_at"] or "never",
                "OVERDUE" if row["overdue"] else "",
            ]
            for row in data
        ],
        ["name", "state", "next run", "last success", ""],
    )
    emit(command, options, data, text if data else "No schedules (start runscheduler to sync).")
    return EXIT_OK


def _show_text(data: dict[str, Any]) -> str:
    switch = (
        "enabled"
        if data["enabled"]
        else f"DISABLED by {data['state_changed_by']} at {data['state_changed_at']}: "
        f"{data['state_reason']}"
    )
    lines = [
        f"Schedule {data['name']}  ({data['status']}, {switch})",
        f"  job                {data['job']} {json.dumps(data['args'], sort_keys=True)}",
        f"  timetable          {data['timetable']}",
    ]
    if data["local_time_reason"]:
        lines.append(f"  local time because {data['local_time_reason']}")
    lines += [
        f"  jitter             {format_seconds(data['jitter_seconds'])}",
        f"  overlap            {data['overlap']}",
        f"  misfire            {data['misfire']} (max_catchup {data['max_catchup']})",
        f"  retry              {json.dumps(data['retry'], sort_keys=True)}",
        f"  timeout            {format_seconds(data['timeout_seconds'])}",
        f"  idempotency        {data['idempotency']}",
        f"  owners             operating {data['operating_owner']}, record {data['record_owner']}",
        f"  retention          {format_seconds(data['retention_seconds'])}",
        f"  last success       {data['last_success_at'] or 'never'}"
        + (f" (occurrence {data['last_success_for']})" if data["last_success_for"] else ""),
        "  overdue            "
        + (f"YES: nothing completed since {data['overdue_expected']}" if data["overdue"] else "no"),
        f"  next runs          {', '.join(data['next_runs']) or '-'}",
    ]
    if data["status"] == ScheduleStatus.DRAFT:
        lines.append(f"  draft: {data['decider']} decides by {data['decide_by']}")
    if not data["declared"]:
        lines.append("  not declared by the running code (not planned)")
    leader = data["leader"]
    lines.append(
        "  scheduler leader   "
        + (
            f"{leader['host']} pid {leader['pid']} until {leader['expires_at']}"
            + ("" if leader["live"] else " (LAPSED)")
            if leader
            else "none yet"
        )
    )
    counts = ", ".join(f"{n} {s}" for s, n in sorted(data["occurrence_counts"].items()))
    lines.append(f"occurrences: {counts or 'none'}")
    rows = [
        [
            o["id"],
            o["scheduled_for"],
            o["state"],
            o["attempts"],
            o["replays"],
            o["completed_at"] or "-",
            o["error_class"] or o["note"] or "",
        ]
        for o in data["recent_occurrences"]
    ]
    if rows:
        lines.append(
            table(rows, ["id", "scheduled for", "state", "attempts", "replays", "completed", ""])
        )
    lines.append("runbook:")
    lines.extend(f"  {step['what']:<22} {step['command']}" for step in data["runbook"])
    return "\n".join(lines)


def handle_show(command: BaseCommand, options: dict[str, Any]) -> int:
    """``schedule show NAME``: see ``scheduling.operations.schedule_details``."""
    data = operations.schedule_details(options["name"])
    emit(command, options, data, _show_text(data))
    return EXIT_OK


def handle_replay(command: BaseCommand, options: dict[str, Any]) -> int:
    """``replay OCCURRENCE --reason ...``: see ``scheduling.operations.replay``."""
    outcome = operations.replay(
        options["occurrence"], reason=options["reason"], by=acting_user(options)
    )
    emit(command, options, outcome.as_dict(), outcome.message)
    return EXIT_OK


def handle_disable(command: BaseCommand, options: dict[str, Any]) -> int:
    """``disable NAME --reason ...``: see ``scheduling.operations.disable``."""
    outcome = operations.disable(options["name"], reason=options["reason"], by=acting_user(options))
    emit(command, options, outcome.as_dict(), outcome.message)
    return EXIT_OK


def handle_enable(command: BaseCommand, options: dict[str, Any]) -> int:
    """``enable NAME``: see ``scheduling.operations.enable``."""
    outcome = operations.enable(options["name"], by=acting_user(options), reason=options["reason"])
    emit(command, options, outcome.as_dict(), outcome.message)
    return EXIT_OK


def handle_run_manual(command: BaseCommand, options: dict[str, Any]) -> int:
    """``run-manual NAME --reason ... [--args JSON]``: see ``scheduling.manual.run``."""
    enqueued = manual.run(
        options["name"],
        by=acting_user(options),
        reason=options["reason"],
        arguments=options["arguments"],
    )
    text = (
        f"Manual job {options['name']!r} is enqueued as job {enqueued.id}."
        if not enqueued.deduped
        else f"Manual job {options['name']!r} is already queued as job {enqueued.id}."
    )
    emit(command, options, {"job_id": enqueued.id, "deduped": enqueued.deduped}, text)
    return EXIT_OK
