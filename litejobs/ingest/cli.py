"""``manage.py litejobs pipelines``, ``pipeline show NAME`` and ``pipeline replay NAME
DROP_REASON --reason WHY``: the ingest pipelines from the command line.

Every verb calls ``litejobs.ingest.operations``, as the admin's pages and buttons do; a replay
is kept in the operator action log with ``--by`` and ``--reason``. A refusal prints
``[code] message`` and exits 1: ``pipeline-unknown`` for a name no app declares,
``ingest-reason-unknown`` for a drop reason outside the pipeline's set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..cli import EXIT_OK, add_json_flag, emit
from ..cli.jobs import acting_user, add_by_flag, add_reason_flag, table
from . import operations

if TYPE_CHECKING:
    from django.core.management.base import BaseCommand

    from ..cli import Subparsers


def register(subparsers: Subparsers) -> None:
    """Add ``pipelines`` and ``pipeline show|replay``."""
    parser = subparsers.add_parser(
        "pipelines", help="Every declared pipeline: buffer fill, totals, freshness, overflow."
    )
    add_json_flag(parser)
    parser.set_defaults(handler=handle_list)

    parser = subparsers.add_parser("pipeline", help="Inspect or replay a pipeline (show, replay).")
    verbs = parser.add_subparsers(dest="pipeline_verb", metavar="show|replay", required=True)
    show = verbs.add_parser(
        "show", help="A pipeline's steps, totals, drops per reason, imports and overflows."
    )
    show.add_argument("name", help="The pipeline's declared name, such as shop.catalog.")
    add_json_flag(show)
    show.set_defaults(handler=handle_show)
    replay = verbs.add_parser(
        "replay", help="Feed the set-aside records of one reason back, after a fix."
    )
    replay.add_argument("name", help="The pipeline's declared name, such as shop.catalog.")
    replay.add_argument(
        "drop_reason",
        metavar="DROP_REASON",
        help="A drop reason of the pipeline's set (its value or name), or 'errored'.",
    )
    add_by_flag(replay)
    add_reason_flag(replay, required=True)
    add_json_flag(replay)
    replay.set_defaults(handler=handle_replay)


def handle_list(command: BaseCommand, options: dict[str, Any]) -> int:
    """``pipelines``: see ``operations.summaries``."""
    found = operations.summaries()
    rows = [
        [
            s.name,
            s.fill + (" OVER" if s.over_capacity else ""),
            s.accepted,
            s.dropped_total,
            s.errored,
            s.freshness,
            _overflow(s.last_overflow),
        ]
        for s in found
    ]
    header = ["pipeline", "buffer", "accepted", "dropped", "errored", "freshness", "last overflow"]
    text = table(rows, header) if rows else "No installed app declares a pipeline."
    emit(command, options, [s.as_dict() for s in found], text)
    return EXIT_OK


def _overflow(event: Any) -> str:
    return "-" if event is None else f"{event.overflow} at {event.at.isoformat()}"


def _show_text(details: operations.Details) -> str:
    s = details.summary
    buffer = s.declaration.buffer
    lines = [
        f"Pipeline {s.name}  (declared in {s.declaration.module})",
        f"  freshness          {s.freshness}",
        f"  buffer             {s.fill}, overflow {buffer.overflow}"
        + (" (OVER CAPACITY)" if s.over_capacity else ""),
        f"  oldest buffered    {s.oldest_fed_at.isoformat() if s.oldest_fed_at else '-'}",
        f"  files              {s.declaration.files or 'none declared: it imports no file'}",
        f"  accepted           {s.accepted}",
        f"  errored            {s.errored}"
        + (f" ({details.replayable.get(operations.ERRORED, 0)} waiting for a replay)"),
        "steps:",
        *(
            f"  {step['position']}. {step['kind']:<7} {step['name']}"
            + (f"  ({', '.join(step['uses'])})" if step["uses"] else "")
            for step in details.steps
        ),
        "dropped per reason:",
        table(
            [[r, n, details.replayable.get(r, 0)] for r, n in s.dropped.items()],
            ["reason", "records", "waiting for a replay"],
        ),
    ]
    lines.append(
        f'  after a fix: manage.py litejobs pipeline replay {s.name} REASON|errored --reason "why"'
    )
    lines += _imports_text(details) + _overflows_text(details)
    return "\n".join(lines)


def _imports_text(details: operations.Details) -> list[str]:
    if not details.imports:
        return ["imports: none"]
    rows = []
    for run in details.imports:
        done = operations.progress(run)
        rows.append(
            [
                run.pk,
                run.file,
                run.state,
                f"{done:.0f}%" if done is not None else f"{run.offset} bytes",
                run.accepted,
                run.dropped,
                run.errored,
                run.refused,
            ]
        )
    header = ["id", "file", "state", "progress", "accepted", "dropped", "errored", "refused"]
    return ["imports:", table(rows, header)]


def _overflows_text(details: operations.Details) -> list[str]:
    if not details.overflows:
        return ["overflow events: none"]
    rows = [
        [e.at.isoformat(), e.overflow, f"{e.buffered} / {e.capacity}", e.fed, e.dropped]
        for e in details.overflows
    ]
    return ["overflow events:", table(rows, ["at", "overflow", "buffered", "fed", "dropped"])]


def handle_show(command: BaseCommand, options: dict[str, Any]) -> int:
    """``pipeline show NAME``: see ``operations.details``."""
    details = operations.details(options["name"])
    emit(command, options, details.as_dict(), _show_text(details))
    return EXIT_OK


def handle_replay(command: BaseCommand, options: dict[str, Any]) -> int:
    """``pipeline replay NAME DROP_REASON --reason WHY``: see ``operations.replay``."""
    outcome = operations.replay(
        options["name"], options["drop_reason"], by=acting_user(options), reason=options["reason"]
    )
    emit(command, options, outcome.as_dict(), outcome.message)
    return EXIT_OK
