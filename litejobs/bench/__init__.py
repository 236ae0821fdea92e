"""``manage.py litejobs bench``: BENCH.md's workloads, each beside its plain-SQL floor.

``run(options)`` creates a scratch database beside the project's (``<name>_litejobs_bench``,
same server, so the same ``fsync`` and ``synchronous_commit``), runs the chosen workloads there
against litejobs and against the floor (psycopg alone), and drops it. The project's own
litejobs rows are never read or written. Worker processes are spawned children that load the
project's settings pointed at the scratch database.

Modules: ``workloads`` (W1-W5, W7-W10), ``floor`` (the plain-SQL floors), ``children`` (worker and
floor processes), ``scratch`` (the scratch database), ``report`` (figures, table, JSON),
``jobs`` (the bench's no-op job declarations).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .children import BenchError
from .report import Report

__all__ = ["SIZES", "WORKLOADS", "BenchError", "BenchOptions", "Report", "run"]

WORKLOADS = ("W1", "W2", "W3", "W4", "W5", "W7", "W8", "W9", "W10")
#: BENCH.md's sizes: jobs for W1-W3, pickup samples for W4, five-step jobs for W7, staged
#: outbox rows for W8, history rows for W9, delayed jobs for W10.
SIZES = {
    "W1": 2000,
    "W2": 10_000,
    "W3": 10_000,
    "W4": 200,
    "W7": 1000,
    "W8": 10_000,
    "W9": 1_000_000,
    "W10": 200,
}


@dataclass(frozen=True)
class BenchOptions:
    """What ``manage.py litejobs bench`` was asked to run."""

    rounds: int = 3
    only: tuple[str, ...] = WORKLOADS
    sizes: dict[str, int] = field(default_factory=lambda: dict(SIZES))
    processes: tuple[int, ...] = (4,)
    idle_seconds: float = 60.0
    keep_db: bool = False


def run(options: BenchOptions, say: Callable[[str], None] = lambda line: None) -> Report:
    """Run the bench; ``say`` hears a line per round. Answers the report.

    Child processes log to a temporary folder, removed on success and quoted on failure.
    """
    from ..conf import settings
    from .scratch import ScratchDatabase
    from .workloads import Bench

    logs = Path(tempfile.mkdtemp(prefix="litejobs-bench-"))
    with ScratchDatabase(settings.DATABASE, keep=options.keep_db) as scratch:
        say(f"scratch database {scratch.name} ready; child logs in {logs}")
        bench = Bench(options, scratch, logs, say)
        try:
            report = bench.run()
        finally:
            bench.close()
    shutil.rmtree(logs, ignore_errors=True)
    return report
