"""``manage.py litejobs list|show|retry|cancel|promote|delete``: find jobs, read them, move them.

The verbs call ``litejobs.jobs.operations``, the functions the admin's actions call too; with
filters instead of an id, ``retry|cancel|promote|delete`` act on up to ``--limit`` matching jobs
(``filtered.bulk``) and answer ``{"affected": n, "remaining": n}``. A refusal
(``TransitionRefused``, ``JobNotFound``) prints ``[code] message`` and exits 1.
"""

from __future__ import annotations

import argparse
import getpass
import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..conf import settings
from ..core import clock
from ..exceptions import InvalidInput
from ..jobs import filtered, holdups, operations, origins, queues, showing
from ..models import Job, JobAttempt, JobState, OperatorVerb
from . import EXIT_OK, add_json_flag, emit, usage

if TYPE_CHECKING:
    from argparse import ArgumentParser
    from collections.abc import Callable

    from django.core.management.base import BaseCommand

    from ..jobs.operations import ActionResult
    from . import Subparsers

LIST_DEFAULT = 50
LIST_MAX = 1000


def _limit(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if not 1 <= number <= LIST_MAX:
        raise argparse.ArgumentTypeError(
            f"must be a whole number from 1 to {LIST_MAX}, got {value}"
        )
    return number


def _queue_option(value: str) -> str:
    """``--queue``: a queue name (an empty or malformed one would match nothing, or be
    ignored)."""
    try:
        return queues.check_queue(value)
    except InvalidInput as error:
        raise argparse.ArgumentTypeError(f"[{error.code}] {error.args[0]}") from error


def _name_option(value: str) -> str:
    """``--name``: a job name, not empty."""
    if not value.strip():
        raise argparse.ArgumentTypeError(
            "a job name is not empty: give the name as `litejobs list` shows it, or leave "
            "--name out"
        )
    return value


#: The largest id a row can have (PostgreSQL's bigint).
MAX_ID = 2**63 - 1


def row_id(what: str) -> Callable[[str], int]:
    """The argparse type of a ``what`` id (``job``, ``occurrence``): a whole number from 1 to
    ``MAX_ID``; a larger one is said to be out of range."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            number = 0
        if number > MAX_ID:
            raise argparse.ArgumentTypeError(
                f"{what} id {value} is out of range: ids go up to {MAX_ID}"
            )
        if number < 1:
            article = "an" if what[0] in "aeiou" else "a"
            raise argparse.ArgumentTypeError(
                f"{article} {what} id is a positive whole number, got {value!r}"
            )
        return number

    parse.__name__ = f"{what}_id"
    return parse


_job_id = row_id("job")


def add_by_flag(parser: ArgumentParser) -> None:
    """``--by``: who acts, logged by every verb (default: the OS user running the command)."""
    parser.add_argument(
        "--by", default=None, help="Who acts, for the log and the record (default: OS user)."
    )


def acting_user(options: dict[str, Any]) -> str:
    """The ``--by`` value, else ``cli:`` and the OS user name, else ``cli`` when the OS knows
    no name (the prefix tells the action log's readers the change came from the CLI)."""
    if options.get("by"):
        by: str = options["by"]
        return by
    try:
        return f"cli:{getpass.getuser()}"
    except (OSError, KeyError):
        return "cli"


def add_reason_flag(parser: ArgumentParser, *, required: bool = False) -> None:
    """``--reason``: why, kept in the operator action log."""
    parser.add_argument(
        "--reason",
        required=required,
        default="",
        help="Why (kept in the operator action log)" + ("; required." if required else "."),
    )


def iso(value: datetime | None) -> str | None:
    """An instant as ISO 8601 text for JSON (``None`` stays ``None``)."""
    return value.isoformat() if value is not None else None


def table(rows: list[list[Any]], header: list[str]) -> str:
    """Left-aligned columns, each as wide as its longest cell."""
    cells = [[str(cell) for cell in row] for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in cells
    )


def register(subparsers: Subparsers) -> None:
    """Add the job verbs."""
    parser = subparsers.add_parser("list", help="List jobs, newest first.")
    parser.add_argument(
        "--state", action="append", choices=JobState.values, help="Only this state (repeatable)."
    )
    parser.add_argument("--queue", type=_queue_option, help="Only this queue.")
    parser.add_argument("--name", type=_name_option, help="Only this job name.")
    parser.add_argument(
        "--limit", type=_limit, default=LIST_DEFAULT, help=f"At most this many (1-{LIST_MAX})."
    )
    add_json_flag(parser)
    parser.set_defaults(handler=handle_list)

    parser = subparsers.add_parser("show", help="Show a job, its error and its attempt history.")
    parser.add_argument("id", type=_job_id)
    add_json_flag(parser)
    parser.set_defaults(handler=handle_show)

    for verb, text in (
        (OperatorVerb.RETRY, "Send a done, dead, cancelled or failed job back to ready."),
        (OperatorVerb.CANCEL, "Cancel a live job (a running one: request its cancellation)."),
        (OperatorVerb.PROMOTE, "Run a scheduled job, or a failed job's retry, now."),
        (OperatorVerb.DELETE, "Delete a job that is not running, with its history."),
    ):
        parser = subparsers.add_parser(
            verb, help=f"{text} Or, with filters, up to --limit matching jobs."
        )
        parser.add_argument("id", type=_job_id, nargs="?", help="The job (or filter instead).")
        add_filter_flags(parser)
        add_by_flag(parser)
        add_reason_flag(parser)
        add_json_flag(parser)
        parser.set_defaults(handler=handle_action, action_verb=verb)


def add_filter_flags(parser: ArgumentParser) -> None:
    """The bulk form's filters and its ``--limit``."""
    parser.add_argument(
        "--state", action="append", choices=JobState.values, help="Jobs in this state (repeatable)."
    )
    parser.add_argument("--name", type=_name_option, help="Jobs of this name.")
    parser.add_argument("--queue", type=_queue_option, help="Jobs of this queue.")
    parser.add_argument("--tenant", help="Jobs of this tenant.")
    parser.add_argument(
        "--limit",
        type=_bulk_limit,
        default=None,
        help=f"Change at most this many matching jobs (default {filtered.BULK_DEFAULT}, "
        f"at most {filtered.BULK_MAX}).",
    )


def _bulk_limit(value: str) -> int:
    try:
        return filtered.check_limit(int(value))
    except (ValueError, InvalidInput) as error:
        raise argparse.ArgumentTypeError(
            f"must be a whole number from 1 to {filtered.BULK_MAX}, got {value}"
        ) from error


# list --------------------------------------------------------------------------------------

LIST_FIELDS = ("id", "name", "queue", "state", "attempts", "max_attempts", "run_at")


def handle_list(command: BaseCommand, options: dict[str, Any]) -> int:
    """Print up to ``--limit`` jobs matching the filters, newest first."""
    jobs = Job.objects.using(settings.DATABASE).order_by("-id")
    if options.get("state"):
        jobs = jobs.filter(state__in=options["state"])
    if options.get("queue") is not None:
        jobs = jobs.filter(queue=options["queue"])
    if options.get("name") is not None:
        jobs = jobs.filter(name=options["name"])
    rows = list(jobs.values(*LIST_FIELDS)[: options["limit"]])
    now = clock.now()
    data = [{**row, "run_at": iso(row["run_at"])} for row in rows]
    text = table(
        [
            [
                row["id"],
                row["name"],
                row["queue"],
                showing.state_label(row["state"], row["run_at"], now),
                f"{row['attempts']}/{row['max_attempts']}",
                iso(row["run_at"]),
            ]
            for row in rows
        ],
        ["id", "name", "queue", "state", "attempts", "run_at"],
    )
    if not rows:
        text = "No jobs match."
    emit(command, options, data, text)
    return EXIT_OK


# show --------------------------------------------------------------------------------------


def job_details(job: Job) -> dict[str, Any]:
    """Every column of the row as JSON values, the payload redacted (and its sensitive values
    blanked out of the result and progress), plus the attempts."""
    data: dict[str, Any] = {}
    for field in Job._meta.concrete_fields:
        value = getattr(job, field.attname)
        data[field.name] = iso(value) if isinstance(value, datetime) else value
    data["payload"] = showing.safe_payload(job.name, job.payload)
    for shown in ("result", "progress"):
        data[shown] = showing.safe_output(job.name, job.payload, data[shown])
    data.update(origins.origin_ids(job))
    data["state_label"] = showing.state_label(job.state, job.run_at, clock.now())
    reason = holdups.holdup_of(job)
    data["waiting"] = reason.as_json() if reason is not None else None
    data["failed_attempts"] = [
        {
            "number": attempt.number,
            "outcome": attempt.outcome,
            "worker": attempt.worker,
            "started_at": iso(attempt.started_at),
            "finished_at": iso(attempt.finished_at),
            "error_class": attempt.error_class,
            "error_message": attempt.error_message,
            "error_traceback": attempt.error_traceback,
        }
        for attempt in JobAttempt.objects.using(settings.DATABASE)
        .filter(job_id=job.pk)
        .order_by("number")
    ]
    return data


def _show_text(data: dict[str, Any]) -> str:
    lines = [f"Job {data['id']}  {data['name']}  ({data['state_label']})"]
    skip = {"id", "name", "state_label", "payload", "result", "progress", "failed_attempts"}
    skip |= {"error_class", "error_message", "error_traceback", "waiting"}
    if data["waiting"] is not None:
        lines.append(f"  {'waiting because':<18} {data['waiting']['message']}")
    for key, value in data.items():
        if key not in skip:
            lines.append(f"  {key:<18} {'' if value is None else value}")
    for key in ("payload", "result", "progress"):
        lines.append(f"  {key:<18} {json.dumps(data[key], sort_keys=True)}")
    if data["error_class"]:
        lines.append(f"error: {data['error_class']}: {data['error_message']}")
        if data["error_traceback"]:
            lines.append(data["error_traceback"].rstrip())
    attempts = data["failed_attempts"]
    lines.append(f"failed attempts: {len(attempts) or 'none'}")
    for a in attempts:
        lines.append(
            f"  #{a['number']} {a['outcome']} at {a['finished_at']} on {a['worker'] or '?'}: "
            f"{a['error_class']}: {a['error_message']}"
        )
    return "\n".join(lines)


def handle_show(command: BaseCommand, options: dict[str, Any]) -> int:
    """Print one job: every column, the redacted payload, its error and its attempts."""
    data = job_details(operations.get_job(options["id"]))
    emit(command, options, data, _show_text(data))
    return EXIT_OK


# retry / cancel / promote / delete ---------------------------------------------------------

_SINGLE: dict[str, Callable[..., ActionResult]] = {
    OperatorVerb.RETRY: operations.retry,
    OperatorVerb.CANCEL: operations.cancel,
    OperatorVerb.PROMOTE: operations.promote,
    OperatorVerb.DELETE: operations.delete,
}


def _filter_of(options: dict[str, Any]) -> filtered.JobFilter:
    return filtered.JobFilter(
        states=tuple(options.get("state") or ()),
        name=options.get("name") or "",
        queue=options.get("queue") or "",
        tenant=options.get("tenant"),
    )


def handle_action(command: BaseCommand, options: dict[str, Any]) -> int:
    """``VERB ID``: the single verb (``operations.retry`` ...); ``VERB --state ... --limit K``:
    ``filtered.bulk`` over the filter. An id with filters, or neither, is a bad usage (exit
    2): a bulk form without a filter would change every job."""
    verb = options["action_verb"]
    found = _filter_of(options)
    by, reason = acting_user(options), options.get("reason") or ""
    if options.get("id") is not None:
        if not found.is_empty or options.get("limit") is not None:
            return usage(command, options, f"Give a job id or filters to {verb}, not both.")
        outcome = _SINGLE[verb](options["id"], by=by, reason=reason)
        emit(command, options, outcome.as_dict(), outcome.message)
        return EXIT_OK
    if found.is_empty:
        return usage(
            command,
            options,
            f"Give a job id, or filters (--state, --name, --queue, --tenant) to {verb} "
            "matching jobs: without a filter it would change every job.",
        )
    limit = options.get("limit") or filtered.BULK_DEFAULT
    counts = filtered.bulk(verb, found, limit=limit, by=by, reason=reason)
    emit(command, options, counts, f"{verb}: {filtered.bulk_summary(counts)}")
    return EXIT_OK
