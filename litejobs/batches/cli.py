"""``manage.py litejobs batch show ID``: a batch from the command line (its counts, its
children by state, its callbacks; ``--json`` for programs). An unknown id prints
``[batch-unknown] ...`` and exits 1."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..cli import EXIT_OK, add_json_flag, emit
from ..cli.jobs import row_id
from .showing import batch_details, get_batch

if TYPE_CHECKING:
    from django.core.management.base import BaseCommand

    from ..cli import Subparsers

_batch_id = row_id("batch")


def register(subparsers: Subparsers) -> None:
    """Add ``batch show``."""
    parser = subparsers.add_parser("batch", help="Batches of jobs (show).")
    verbs = parser.add_subparsers(dest="batch_verb", metavar="show", required=True)
    show = verbs.add_parser(
        "show", help="A batch: its counts, its children by state, its callbacks."
    )
    show.add_argument("batch_id", type=_batch_id, help="The batch's id.")
    add_json_flag(show)
    show.set_defaults(handler=handle_show)


def handle_show(command: BaseCommand, options: dict[str, Any]) -> int:
    """``batch show ID``: every column of the batch, its children and callbacks."""
    data = batch_details(get_batch(options["batch_id"]))
    emit(command, options, data, show_text(data))
    return EXIT_OK


def show_text(data: dict[str, Any]) -> str:
    """The batch as lines for people."""
    counts = data["counts"]
    lines = [
        f"batch {data['id']} {data['label'] or ''}".rstrip() + f": {data['state']}",
        f"  children: {data['total']} ({data['pending']} left; {counts['done']} done, "
        f"{counts['dead']} dead, {counts['cancelled']} cancelled)",
        "  now: "
        + (
            ", ".join(f"{n} {state}" for state, n in sorted(data["children_by_state"].items()))
            or "no children"
        ),
    ]
    if data["retried_after_callback"]:
        lines.append(f"  retried after its callback: {data['retried_after_callback']}")
    for role in ("on_complete", "on_failure"):
        callback = data[role]
        if callback:
            lines.append(
                f"  {role}: {callback['job']} job {callback['job_id']} ({callback['state']})"
            )
    return "\n".join(lines) + "\n"
