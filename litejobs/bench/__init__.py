"""``manage.py litejobs bench``: the workloads W1-W14, each beside its plain-SQL floor.

``run(options)`` creates a scratch database beside the project's (``<name>_litejobs_bench``,
same server, so the same ``fsync`` and ``synchronous_commit``), runs the chosen workloads there
against litejobs and against the floor (psycopg alone), and drops it. The project's own
litejobs rows are never read or written. Worker processes are spawned children that load the
project's settings pointed at the scratch database.

Each workload runs in the durability variants asked for (``synchronous_commit`` on, off, or
both), on every connection of litejobs and of the floor alike.

Modules: ``options`` (what a run is asked), ``workloads`` (W1-W14), ``floor`` (the plain-SQL
floors), ``children`` (worker and floor processes), ``scratch`` (the scratch database),
``report`` (figures, table, JSON), ``errors`` (``BenchError``), ``jobs`` (the bench's no-op job
declarations), ``pipeline`` and ``files`` (W11's ingest pipeline, its records and its CSV),
``exports`` and ``sales`` (W12's report, its model and its table).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from .errors import BenchError
from .options import DURABILITY, PROCESSES, SIZES, WORKLOADS, BenchOptions
from .report import Report

__all__ = [
    "DURABILITY",
    "PROCESSES",
    "SIZES",
    "WORKLOADS",
    "BenchError",
    "BenchOptions",
    "Report",
    "run",
]


def run(options: BenchOptions, say: Callable[[str], None] = lambda line: None) -> Report:
    """Run the bench; ``say`` hears a line per round. Answers the report.

    Child processes log to a temporary folder, removed on success and quoted on failure.
    """
    # The workloads read the models: imported once Django is set up (bench children import
    # this package before it is).
    from django.conf import settings as django_settings

    from ..conf import settings
    from .scratch import ScratchDatabase
    from .workloads import Bench

    if django_settings.DEBUG:
        say(
            "warning: DEBUG is on: Django records every query of the bench's processes, so "
            "their figures suffer; run the bench with DEBUG = False for figures to compare."
        )
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
