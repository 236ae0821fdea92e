"""``manage.py litejobs bench``: the workloads W1-W14 beside their plain-SQL floors.

Runs in a scratch database ``<name>_litejobs_bench`` on the project's server (created,
migrated, dropped; ``--keep-db`` keeps it), never on the project's own rows. Progress goes to
stderr; the table (or ``--json``) to stdout.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..cli import EXIT_OK, add_json_flag, emit
from . import DURABILITY, PROCESSES, SIZES, WORKLOADS, BenchOptions, run

if TYPE_CHECKING:
    from django.core.management.base import BaseCommand

    from ..cli import Subparsers


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of 1 or more, got {value!r}")
    return number


def _positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = 0.0
    if not number > 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, got {value!r}")
    return number


def _workloads(value: str) -> tuple[str, ...]:
    chosen = {name.strip().upper() for name in value.split(",") if name.strip()}
    unknown = sorted(chosen - set(WORKLOADS))
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(
            f"takes some of {','.join(WORKLOADS)} separated by commas, got {value!r}"
        )
    return tuple(name for name in WORKLOADS if name in chosen)


def _sizes(value: str) -> dict[str, int]:
    sizes = {}
    for item in value.split(","):
        name, _, count = item.partition("=")
        name = name.strip().upper()
        if name not in SIZES:
            raise argparse.ArgumentTypeError(
                f"takes NAME=COUNT pairs for {', '.join(SIZES)} (e.g. W3=2000), got {item!r}"
            )
        sizes[name] = _positive_int(count)
    return sizes


def _process_counts(value: str) -> tuple[int, ...]:
    return tuple(_positive_int(count) for count in value.split(","))


def _durability(value: str) -> tuple[str, ...]:
    if value == "both":
        return DURABILITY
    if value in DURABILITY:
        return (value,)
    raise argparse.ArgumentTypeError(f"takes on, off or both, got {value!r}")


def register(subparsers: Subparsers) -> None:
    """Add the ``bench`` verb."""
    defaults = ",".join(f"{name}={count}" for name, count in SIZES.items())
    parser = subparsers.add_parser(
        "bench",
        help="Measure litejobs beside a plain-SQL floor in a scratch database.",
        description=(
            "Runs the workloads W1-W14 against litejobs and against plain SQL over psycopg, in "
            "a scratch database on the same server, and prints median [min-max] over the rounds "
            "with the ratio litejobs / floor and each side's client CPU per job."
        ),
    )
    parser.add_argument(
        "--rounds", type=_positive_int, default=3, help="Rounds per workload (default 3)."
    )
    parser.add_argument(
        "--only",
        type=_workloads,
        default=WORKLOADS,
        help=f"Workloads to run, e.g. W1,W3 (default {','.join(WORKLOADS)}).",
    )
    parser.add_argument(
        "--jobs",
        type=_sizes,
        default={},
        help=f"Sizes: jobs for W1-W3 and W6, pickups for W4, five-step jobs for W7, staged "
        f"outbox rows for W8, history rows for W9, delayed jobs for W10, CSV rows imported for "
        f"W11, records fed for W11F, rows exported for W12, lock pairs for W13, children of "
        f"W14's batch "
        f"(default {defaults}).",
    )
    parser.add_argument(
        "--processes",
        type=_process_counts,
        default=PROCESSES,
        help="W3's worker-process counts, one thread each, e.g. 1,4 "
        f"(default {','.join(map(str, PROCESSES))}).",
    )
    parser.add_argument(
        "--durability",
        type=_durability,
        default=("on",),
        metavar="{on,off,both}",
        help="synchronous_commit for every connection of litejobs and of the floor: on "
        "(durable commits, the default), off (each commit returns before its WAL is flushed: "
        "the CPU-bound variant a fast disk shows), or both (each workload in both variants, "
        "one table each).",
    )
    parser.add_argument(
        "--idle-seconds",
        type=_positive_float,
        default=60.0,
        help="How long W5 watches an idle worker (default 60).",
    )
    parser.add_argument(
        "--keep-db", action="store_true", help="Keep the scratch database (and reuse it next time)."
    )
    add_json_flag(parser)
    parser.set_defaults(handler=handle_bench)


def handle_bench(command: BaseCommand, options: dict[str, Any]) -> int:
    """Run the bench and print its table (or JSON)."""
    report = run(
        BenchOptions(
            rounds=options["rounds"],
            only=options["only"],
            sizes={**SIZES, **options["jobs"]},
            processes=options["processes"],
            idle_seconds=options["idle_seconds"],
            keep_db=options["keep_db"],
            durability=options["durability"],
        ),
        say=lambda line: command.stderr.write(line),
    )
    emit(command, options, report.as_dict(), report.render())
    return EXIT_OK
