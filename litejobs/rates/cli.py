"""``manage.py litejobs rates``: every rate bucket, its starts in the window, the starts left
and the next possible start (``--json`` for programs)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..cli import EXIT_OK, add_json_flag, emit
from ..cli.jobs import table
from ..core.durations import format_duration
from . import windows

if TYPE_CHECKING:
    from django.core.management.base import BaseCommand

    from ..cli import Subparsers


def register(subparsers: Subparsers) -> None:
    """Add ``rates``."""
    parser = subparsers.add_parser(
        "rates", help="Rate buckets: starts in the window, starts left, the next possible start."
    )
    add_json_flag(parser)
    parser.set_defaults(handler=handle_list)


def handle_list(command: BaseCommand, options: dict[str, Any]) -> int:
    """``rates``: see ``windows.buckets``."""
    found = windows.buckets()
    rows = [
        [
            b.key,
            f"{b.limit:,} per {format_duration(b.per)}",
            b.used,
            b.left,
            b.next_start.isoformat() if b.next_start else "now",
            b.waiting,
        ]
        for b in found
    ]
    header = ["key", "rate", "in window", "left", "next start", "waiting"]
    text = table(rows, header) if rows else "No rate-limited job has started yet."
    emit(command, options, [b.as_json() for b in found], text)
    return EXIT_OK
