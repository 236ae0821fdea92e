"""``manage.py litejobs locks [--all] [--json]``: the lock keys held now, across every host."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..cli import EXIT_OK, add_json_flag, emit
from ..cli.jobs import table
from . import operations

if TYPE_CHECKING:
    from django.core.management.base import BaseCommand

    from ..cli import Subparsers


def register(subparsers: Subparsers) -> None:
    """Add ``locks``."""
    parser = subparsers.add_parser(
        "locks", help="Lock keys held now: token, holder host and pid, acquired, expires."
    )
    parser.add_argument(
        "--all",
        action="store_true",
        dest="every",
        help="Also the keys released or lapsed in the last day (who held them last).",
    )
    add_json_flag(parser)
    parser.set_defaults(handler=handle_locks)


def handle_locks(command: BaseCommand, options: dict[str, Any]) -> int:
    """Print the held locks (with ``--all``, the released and lapsed keys too)."""
    found = operations.held_locks(every=options["every"])
    rows = [view.as_dict() for view in found]
    text = table(
        [
            [
                row["key"],
                row["token"],
                row["state"],
                f"{row['host']}:{row['pid']}",
                row["acquired_at"],
                row["expires_at"],
            ]
            for row in rows
        ],
        ["key", "token", "state", "holder", "acquired", "expires"],
    )
    emit(command, options, rows, text if rows else "No lock is held.")
    return EXIT_OK
