"""The bench's workloads W1-W14, each beside its plain-SQL floor, in the scratch database.

Every round starts from empty litejobs tables (W9: from its history rows alone) and times only
its measured part; rounds alternate litejobs and floor so drift on a shared machine hits both.
Times are read with ``time.perf_counter`` within one process, and with ``time.time`` where two
processes compare instants (drain ends, pickups): measurements, not product code, which reads
``litejobs.clock``. Client CPU is ``time.process_time`` of the process doing the work: the
bench process for the enqueues and the relay, the worker and floor children for the drains.

Each chosen workload runs once per durability variant: the scratch database's connections (this
process's, the workers' and the floors') are reopened with ``synchronous_commit`` set to the
variant, and every connection's own ``SHOW synchronous_commit`` is checked against it.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import psycopg
from django.apps import apps
from django.conf import settings as django_settings
from django.db import DatabaseError, connections, transaction
from psycopg import sql

from ..batches import batch
from ..conf import DEFAULTS
from ..conf import settings as litejobs_settings
from ..core import clock
from ..core.enums import ImportState, ReportState
from ..ingest import Pipeline
from ..jobs.declarations import MAX_BATCH, JobDefinition
from ..jobs.ratelimits import MAX_LIMIT
from ..models import Job, ReportRun
from ..models import Worker as WorkerRow
from ..outbox.relay import OutboxRelay
from ..reports import storage
from ..reports.reports import Report as Declared
from . import exports, files, floor, locking, sales
from .children import Child, ChildSpec, DjangoTarget, Usage, started
from .errors import BenchError
from .jobs import (
    FLEET_RATE,
    QUEUE,
    STEPS,
    batch_done,
    delayed,
    five_steps,
    noop,
    noop_fleet_rate,
    noop_roomy,
    noop_unfenced,
    on_paid,
    pickup,
)
from .options import SIZES, WORKLOADS, BenchOptions
from .pipeline import PAGE, declared
from .report import (
    EMPTY_TABLE,
    FLOOR,
    HIGHER,
    LOWER,
    K,
    Report,
    Row,
    Stats,
    environment,
    percentile,
    summarise,
)
from .scratch import ScratchDatabase

#: ``runworker``'s default ``--concurrency``.
DEFAULT_THREADS = 4
#: W6's worker processes (one thread each, as W3's process rows) and its memory checkpoint:
#: each worker's memory is read when this fraction of the jobs is done, and at the end.
SOAK_PROCESSES = 4
CHECKPOINT = 0.1
MEGABYTE = 1024 * 1024
PICKUP_INTERVAL = 0.05
#: W10: each delayed job is due 50-500 ms after its enqueue, one enqueue every 10 ms.
DELAYS_MS = (50, 500)
DELAYED_INTERVAL = 0.01
#: W12's smallest size: its tenth is exported by the worker too (more than the request's two).
MIN_EXPORT = 20
#: W3's targets per durability variant. atomic=False drains at twice pgqueuer's 2,683 jobs/s
#: on the reference 2-core machine with durable commits, and at 10,000 jobs/s without them.
W3_TARGETS = {
    "default": {"on": ">= 1.0x", "off": ">= 0.6x"},
    "one thread": {"on": ">= 0.9x", "off": ">= 0.6x"},
    "atomic=False": {"on": ">= 5,400 jobs/s", "off": ">= 10,000 jobs/s"},
}
#: How long an idle worker runs before W5 starts counting (its start-up statements excluded).
SETTLE = 1.0
POLL = 0.1
CLIENT = "counted client-side"
SERVER = "pg_stat_statements"

Figures = dict[str, float]

PROGRESS = """
SELECT count(*) FILTER (WHERE state = 'done'),
       count(*) FILTER (WHERE state NOT IN ('done', 'ready', 'scheduled', 'running')),
       extract(epoch FROM max(finished_at))
FROM {table} WHERE id >= %s
"""
LATENCIES = """
SELECT ((result #>> '{}')::float8 - (payload ->> 'sent')::float8) * 1000
FROM litejobs_job WHERE id >= %s
"""
CALLBACK_GAP = """
SELECT extract(epoch FROM callback.started_at - (
           SELECT max(finished_at) FROM litejobs_job WHERE batch_id = batch.id
       )) * 1000
FROM litejobs_batch AS batch JOIN litejobs_job AS callback ON callback.id = batch.on_complete_job_id
WHERE batch.id = %s AND callback.state = 'done'
"""
LATENESS = """
SELECT ((result #>> '{}')::float8 - (payload ->> 'due')::float8) * 1000
FROM litejobs_job WHERE id >= %s
"""
STARTS = """
SELECT extract(epoch FROM started_at)::float8 FROM litejobs_job WHERE id >= %s ORDER BY started_at
"""
HISTORY = """
INSERT INTO litejobs_job (
    name, queue, key, payload, state, run_at, attempts, max_attempts, fence,
    created_at, started_at, finished_at, error_class, error_message
)
SELECT %(name)s, %(queue)s, 'history:' || n, jsonb_build_object('n', n),
       CASE WHEN mod(n, 2) = 0 THEN 'dead' ELSE 'done' END,
       at, 1, 1, n, at, at, at,
       CASE WHEN mod(n, 2) = 0 THEN 'bench.History' ELSE '' END,
       CASE WHEN mod(n, 2) = 0 THEN 'a dead job of the W9 history' ELSE '' END
FROM generate_series(1, %(count)s) AS n,
     LATERAL (SELECT now() - make_interval(secs => n)) AS history (at)
"""
# W8: staged messages (untimed), as stage() writes them, and the count the relay published.
STAGE_OUTBOX = """
INSERT INTO litejobs_outboxmessage (topic, key, tenant, payload, created_at)
SELECT %(topic)s, 'order:' || mod(n, 100), '', jsonb_build_object('order', n), now()
FROM generate_series(1, %(count)s) AS n
"""
PUBLISHED = "SELECT count(*) FROM litejobs_outboxmessage WHERE published_at IS NOT NULL"
# W11: an import's progress, and what it wrote.
IMPORTED = """
SELECT state, accepted + dropped + errored + refused, extract(epoch FROM finished_at)
FROM litejobs_importrun WHERE id = %s
"""
IMPORT_COUNTS = """
SELECT accepted, dropped, errored, refused, (SELECT count(*) FROM {products})
FROM litejobs_importrun WHERE id = %s
"""
BUFFERED = "SELECT count(*) FROM litejobs_bufferedrecord"
# W12: a report run's end.
EXPORTED = """
SELECT state, stop_reason || ' ' || error, extract(epoch FROM finished_at)
FROM litejobs_reportrun WHERE id = %s
"""
# W5 with pg_stat_statements: the floor's statements all name its table or channel.
STATEMENTS = """
SELECT coalesce(sum(calls) FILTER (WHERE query NOT LIKE %(floor)s), 0),
       coalesce(sum(calls) FILTER (WHERE query LIKE %(floor)s), 0)
FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND query NOT LIKE '%%pg_stat_statements%%'
"""


def _timed(action: Callable[[], Any]) -> float:
    """Seconds ``action`` took (a measurement: ``perf_counter``, not the litejobs clock)."""
    started_at = time.perf_counter()
    action()
    return time.perf_counter() - started_at


def _timed_cpu(action: Callable[[], Any]) -> tuple[float, float]:
    """Seconds ``action`` took, and this process's CPU seconds (user + system) meanwhile."""
    cpu_at = time.process_time()
    seconds = _timed(action)
    return seconds, time.process_time() - cpu_at


def _per(cpu_seconds: float, units: int) -> float:
    """CPU µs per unit (job, step, row)."""
    return cpu_seconds * 1_000_000 / units


def _latency_figures(latencies: list[float]) -> Figures:
    return {
        "p50": percentile(latencies, 0.5),
        "p95": percentile(latencies, 0.95),
        "max": max(latencies),
    }


class Bench:
    """Runs the chosen workloads in a scratch database and collects their rows."""

    def __init__(
        self,
        options: BenchOptions,
        scratch: ScratchDatabase,
        logs: Path,
        say: Callable[[str], None],
    ) -> None:
        # override_settings hides the module name; the environment still has it.
        settings_module = django_settings.SETTINGS_MODULE or os.environ.get(
            "DJANGO_SETTINGS_MODULE"
        )
        if not settings_module:
            raise BenchError(
                "The bench's worker processes load the project's settings module: run it through "
                "manage.py (DJANGO_SETTINGS_MODULE), not settings.configure()."
            )
        self.options = options
        self.sizes = {**SIZES, **options.sizes}
        self.scratch = scratch
        self.logs = logs
        self.say = say
        self.params = scratch.psycopg_params()
        self.sql = floor.connect(self.params)
        floor.create(self.sql)
        self.rows: list[Row] = []
        self.durability = ""
        #: Per variant, the synchronous_commit each kind of connection answered.
        self.seen: dict[str, dict[str, set[str]]] = {}
        self.memory: dict[str, list[dict[str, Any]]] = {}
        self._children = itertools.count(1)
        self._history_after: int | None = None
        self._django = DjangoTarget(
            settings_module=settings_module,
            alias=scratch.alias,
            database=scratch.name,
            litejobs=dict(getattr(django_settings, "LITEJOBS", None) or {}),
        )
        self.w5_method, self.w5_description = (
            self._statement_method() if "W5" in options.only else ("", "not measured")
        )
        #: W11's CSV files by row count, and the storage alias that serves their folder (the
        #: temporary folder's name, unique to this run).
        self._catalogs: dict[int, Path] = {}
        self._storage = logs.name
        #: W12's storage alias (its own: a storage keeps the folder it was first built with).
        self._export_storage = ""

    def close(self) -> None:
        self.sql.close()

    def run(self) -> Report:
        """Run every chosen workload, in their numbered order; answers the report."""
        with self.sql.cursor() as cursor:
            env = environment(cursor, self.scratch.name)
        report = Report(
            environment=env,
            settings={name: getattr(litejobs_settings, name) for name in DEFAULTS},
            parameters={
                "rounds": self.options.rounds,
                "only": list(self.options.only),
                "sizes": self.sizes,
                "processes": list(self.options.processes),
                "idle_seconds": self.options.idle_seconds,
                "w5_method": self.w5_description,
                "durability": list(self.options.durability),
            },
            floors={w: text for w, text in floor.DESCRIPTIONS.items() if w in self.options.only},
        )
        for workload in WORKLOADS:
            if workload in self.options.only:
                for variant in self.options.durability:
                    self._use_durability(variant)
                    getattr(self, workload.lower())()
        report.rows = self.rows
        report.durability = {
            variant: {kind: sorted(values) for kind, values in sorted(seen.items())}
            for variant, seen in self.seen.items()
        }
        report.memory = self.memory
        return report

    # Durability --------------------------------------------------------------------------

    def _use_durability(self, variant: str) -> None:
        """Reopen this process's connections with ``synchronous_commit = variant``; the
        children started from now on take it too."""
        if variant == self.durability:
            return
        self.durability = variant
        options = self.scratch.durability(variant)
        self._django = replace(self._django, session_options=options)
        self.sql.close()
        self.params = self.scratch.psycopg_params()
        self.sql = floor.connect(self.params)
        self._saw("floor", _one(self.sql.execute("SHOW synchronous_commit"))[0])
        with connections[self.scratch.alias].cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            self._saw("bench", cursor.fetchone()[0])

    def _saw(self, kind: str, value: str) -> None:
        """Record what a connection answered; refuse a variant its connections do not run."""
        if value != self.durability:
            raise BenchError(
                f"The durability {self.durability} variant needs synchronous_commit="
                f"{self.durability} on every connection, but a {kind} connection runs with "
                f"{value!r}; is a connection pooler or the role's settings overriding libpq "
                "options?"
            )
        self.seen.setdefault(self.durability, {}).setdefault(kind, set()).add(value)

    @contextmanager
    def _started(self, specs: list[ChildSpec]) -> Iterator[list[Child]]:
        """Start children (``children.started``), checking each one's durability."""
        with started(specs) as running:
            for child in running:
                kind = "workers" if child.spec.role == "worker" else "floor"
                self._saw(kind, child.synchronous_commit)
            yield running

    # The rounds --------------------------------------------------------------------------

    def _repeat(self, label: str, once: Callable[[], dict[K, float]]) -> dict[K, Stats]:
        """Run ``once`` for every round; ``{figure: Stats}``."""
        rounds = []
        for number in range(1, self.options.rounds + 1):
            self.say(
                f"{label} (durability {self.durability}): round {number}/{self.options.rounds}"
            )
            rounds.append(once())
        return summarise(rounds)

    def _compare(
        self, label: str, once: Callable[[], tuple[Figures, Figures]]
    ) -> tuple[dict[str, Stats], dict[str, Stats]]:
        """Run ``once`` (answering litejobs' figures and the floor's) for every round."""
        pairs = self._repeat(label, lambda: _tagged(once()))
        return (
            {figure: stats for (side, figure), stats in pairs.items() if side == "litejobs"},
            {figure: stats for (side, figure), stats in pairs.items() if side == "floor"},
        )

    def _add(
        self,
        workload: str,
        variant: str,
        litejobs: dict[str, Stats],
        baseline: dict[str, Stats],
        figures: list[tuple[str, str, str, str]],
        kind: str = FLOOR,
        cpu: bool = True,
    ) -> None:
        """One row per ``(figure, unit, better, target)`` of a workload variant, with each
        side's ``cpu`` figure (µs per unit) when it has one and ``cpu`` is asked for."""
        for figure, unit, better, target in figures:
            self.rows.append(
                Row(
                    workload,
                    variant,
                    figure,
                    unit,
                    better,
                    litejobs[figure],
                    baseline[figure],
                    target=target,
                    baseline=kind,
                    durability=self.durability,
                    cpu=litejobs.get("cpu") if cpu else None,
                    floor_cpu=baseline.get("cpu") if cpu else None,
                )
            )

    def _add_growth(
        self, workload: str, whose: str, litejobs: dict[str, Stats], checkpoint: str
    ) -> None:
        """The memory rows of a soak: each RSS figure at the end beside itself at the
        checkpoint (``checkpoint``: how far the soak was, ``"5,000 jobs"``)."""
        for figure, what in (("peak RSS", "peak RSS"), ("RSS", "resident set")):
            self._add(
                workload,
                f"{whose} {what} at the end",
                {figure: litejobs[figure]},
                {figure: litejobs[f"{figure} at checkpoint"]},
                [(figure, "MB", LOWER, "<= 1.05x (growth <= 5 %)")],
                kind=f"at {checkpoint}",
                cpu=False,
            )

    # Workloads ---------------------------------------------------------------------------

    def w1(self) -> None:
        """W1: single enqueues, one transaction each, from one process."""
        count = self.sizes["W1"]

        def enqueue_each() -> None:
            for n in range(count):
                noop.enqueue(n=n)

        def insert_each() -> None:
            for n in range(count):
                floor.insert_one(self.sql, n)

        def figures(seconds: float, cpu: float) -> Figures:
            return {"rate": count / seconds, "cpu": _per(cpu, count)}

        def once() -> tuple[Figures, Figures]:
            self._reset()
            litejobs = figures(*_timed_cpu(enqueue_each))
            floor.reset(self.sql)
            return litejobs, figures(*_timed_cpu(insert_each))

        litejobs, floor_stats = self._compare("W1", once)
        variant = f"{count:,} enqueue() calls, a transaction each"
        self._add("W1", variant, litejobs, floor_stats, [("rate", "jobs/s", HIGHER, ">= 0.75x")])

    def w2(self) -> None:
        """W2: ``enqueue_many`` of the whole batch in one transaction."""
        count = self.sizes["W2"]
        arguments = [{"n": n} for n in range(count)]

        def figures(seconds: float, cpu: float) -> Figures:
            return {
                "rate": count / seconds,
                "per 1,000": seconds * 1000 / (count / 1000),
                "cpu": _per(cpu, count),
            }

        def once() -> tuple[Figures, Figures]:
            self._reset()
            litejobs = figures(*_timed_cpu(lambda: self._enqueue_many(noop, arguments)))
            floor.reset(self.sql)
            return litejobs, figures(*_timed_cpu(lambda: floor.copy_many(self.sql, count)))

        litejobs, floor_stats = self._compare("W2", once)
        self._add(
            "W2",
            f"{count:,} jobs through enqueue_many() (floor: COPY per 1,000)",
            litejobs,
            floor_stats,
            [("rate", "jobs/s", HIGHER, ""), ("per 1,000", "ms", LOWER, "<= 2.5x")],
        )

    def w3(self) -> None:
        """W3: pre-enqueued jobs drained from the worker's start to the last completion."""
        count = self.sizes["W3"]
        targets = {name: by[self.durability] for name, by in W3_TARGETS.items()}
        variants = [
            ("default concurrency (4 threads)", noop, 1, DEFAULT_THREADS, targets["default"]),
            ("--concurrency 1", noop, 1, 1, targets["one thread"]),
            (
                "atomic=False jobs, 4 threads",
                noop_unfenced,
                1,
                DEFAULT_THREADS,
                targets["atomic=False"],
            ),
        ] + [
            (f"{processes} worker processes x 1 thread", noop, processes, 1, "")
            for processes in self.options.processes
        ]
        for variant, definition, processes, threads, target in variants:

            def once(
                d: JobDefinition = definition, p: int = processes, t: int = threads
            ) -> tuple[Figures, Figures]:
                return self._drain(d, p, t), self._floor_drain(p, t)

            litejobs, floor_stats = self._compare(f"W3 {variant}", once)
            self._add(
                "W3",
                f"{count:,} jobs, {variant}",
                litejobs,
                floor_stats,
                [("drain rate", "jobs/s", HIGHER, target)],
            )
            if definition is noop and processes == 1 and threads == DEFAULT_THREADS:
                self._w3_rates(litejobs)

    def _w3_rates(self, unlimited: dict[str, Stats]) -> None:
        """W3 under a rate: one that never binds beside the same jobs without one, and a
        fleet rate that binds beside the rate itself (4 threads each)."""
        count = self.sizes["W3"]
        roomy = self._repeat(
            "W3 non-binding rate", lambda: self._drain(noop_roomy, 1, DEFAULT_THREADS)
        )
        self._add(
            "W3",
            f"{count:,} jobs, a rate that never binds ({MAX_LIMIT:,}/s), 4 threads",
            roomy,
            unlimited,
            [("drain rate", "jobs/s", HIGHER, ">= 0.95x")],
            kind="the same jobs without a rate",
        )
        binding = self._repeat("W3 binding fleet rate", self._rated_starts)
        limit = Stats.of([float(FLEET_RATE)])
        self._add(
            "W3",
            f"{fleet_rate_jobs(count):,} jobs, a fleet rate of {FLEET_RATE}/s that binds, "
            "4 threads",
            binding,
            {"start rate": limit, "most starts in any 1 s": limit},
            [
                ("start rate", "starts/s", HIGHER, ">= 0.98x"),
                ("most starts in any 1 s", "starts", LOWER, "<= 1.0x"),
            ],
            kind="the rate",
            cpu=False,
        )

    def _rated_starts(self) -> Figures:
        """Drain ``noop_fleet_rate`` jobs; the start rate past the first window (the starts
        after the first second over the time they took) and the most starts in any second."""
        self._reset()
        count = fleet_rate_jobs(self.sizes["W3"])
        first = self._enqueue_many(noop_fleet_rate, [{"n": n} for n in range(count)])
        self._timed_drain([self._spec("worker", DEFAULT_THREADS)], Job._meta.db_table, first, count)
        started = [
            row[0]
            for row in self.sql.execute(STARTS, (first,)).fetchall()  # seconds, in order
        ]
        return rate_figures(started, FLEET_RATE, 1.0)

    def w4(self) -> None:
        """W4: an idle worker; the delay from an enqueue to its body starting."""
        litejobs, floor_stats = self._compare(
            "W4", lambda: (self._pickups(), self._floor_pickups())
        )
        self._add(
            "W4",
            f"{self.sizes['W4']} pickups {PICKUP_INTERVAL * 1000:.0f} ms apart, enqueue to body",
            litejobs,
            floor_stats,
            [
                ("p50", "ms", LOWER, "<= 1.5 ms"),
                ("p95", "ms", LOWER, "<= 3 ms"),
                ("max", "ms", LOWER, ""),
            ],
        )

    def w5(self) -> None:
        """W5: the statements an idle worker issues, per minute."""
        litejobs, floor_stats = self._compare("W5", self._idle)
        self._add(
            "W5",
            f"an idle worker for {self.options.idle_seconds:g} s ({self.w5_method})",
            litejobs,
            floor_stats,
            [("statements", "per minute", LOWER, "<= 6/min")],
        )

    def w6(self) -> None:
        """W6: many jobs through several worker processes; the rate and each worker's memory."""
        count = self.sizes["W6"]
        checkpoint = max(1, int(count * CHECKPOINT))

        def once() -> tuple[Figures, Figures]:
            litejobs, memory = self._soak(count, checkpoint)
            self.memory.setdefault(self.durability, []).append(memory)
            return litejobs, self._floor_drain(SOAK_PROCESSES, 1, count)

        litejobs, floor_stats = self._compare("W6", once)
        variant = f"{count:,} jobs, {SOAK_PROCESSES} worker processes x 1 thread"
        self._add("W6", variant, litejobs, floor_stats, [("drain rate", "jobs/s", HIGHER, "")])
        self._add_growth("W6", f"{variant}: the largest worker", litejobs, f"{checkpoint:,} jobs")

    def w10(self) -> None:
        """W10: an idle worker; how late a delayed job's body starts after its run_at."""
        samples = self.sizes["W10"]
        litejobs, floor_stats = self._compare(
            "W10", lambda: (self._delayed_pickups(), self._floor_pickups(samples))
        )
        low, high = DELAYS_MS
        self._add(
            "W10",
            f"{samples} jobs due {low}-{high} ms after their enqueue, run_at to body",
            litejobs,
            floor_stats,
            [
                ("p50", "ms", LOWER, ""),
                ("p95", "ms", LOWER, "<= 10 ms"),
                ("max", "ms", LOWER, ""),
            ],
        )

    def w7(self) -> None:
        """W7: durable five-step jobs drained by one worker at its default concurrency."""
        count = self.sizes["W7"]

        def once() -> tuple[Figures, Figures]:
            self._reset()
            first = self._enqueue_many(five_steps, [{"n": n} for n in range(count)])
            spec = self._spec("worker", DEFAULT_THREADS)
            rate, cpu = self._timed_drain([spec], Job._meta.db_table, first, count)
            litejobs = {"steps": rate * STEPS, "cpu": _per(cpu, count * STEPS)}
            floor.reset(self.sql)
            first = floor.fill(self.sql, count)
            spec = self._spec("steps", DEFAULT_THREADS)
            rate, cpu = self._timed_drain([spec], floor.TABLE, first, count)
            return litejobs, {"steps": rate * STEPS, "cpu": _per(cpu, count * STEPS)}

        litejobs, floor_stats = self._compare("W7", once)
        self._add(
            "W7",
            f"{count:,} durable {STEPS}-step jobs, {DEFAULT_THREADS} threads",
            litejobs,
            floor_stats,
            [("steps", "steps/s", HIGHER, ">= 0.5x")],
        )

    def w8(self) -> None:
        """W8: the outbox relay publishing staged messages to a subscriber job, in batches."""
        count = self.sizes["W8"]
        batch = int(litejobs_settings.OUTBOX_BATCH)

        def once() -> tuple[Figures, Figures]:
            self._reset()
            self.sql.execute(STAGE_OUTBOX, {"topic": on_paid.topic, "count": count})
            relay = OutboxRelay(install_signals=False)
            seconds, cpu = _timed_cpu(relay.publish_pending)
            relay.resign()
            published = _one(self.sql.execute(PUBLISHED))[0]
            jobs = Job.objects.using(self.scratch.alias).filter(name=on_paid.name).count()
            if published != count or jobs != count:
                raise BenchError(
                    f"W8: the relay published {published} of {count} messages and created "
                    f"{jobs} subscriber jobs; see the litejobs.outbox.relay log."
                )
            floor.reset(self.sql)
            floor.stage_outbox(self.sql, count)
            floor_seconds, floor_cpu = _timed_cpu(lambda: floor.relay_outbox(self.sql, batch))
            return (
                {"rate": count / seconds, "cpu": _per(cpu, count)},
                {"rate": count / floor_seconds, "cpu": _per(floor_cpu, count)},
            )

        litejobs, floor_stats = self._compare("W8", once)
        self._add(
            "W8",
            f"{count:,} staged messages to one subscriber, {batch} per transaction",
            litejobs,
            floor_stats,
            [("rate", "rows/s", HIGHER, ">= 0.6x")],
        )

    def w9(self) -> None:
        """W9: W3 (default concurrency) and W4 with finished rows, beside an empty table.

        Each round measures both on the empty table, loads the history in one statement, and
        measures both again, so the two sit minutes apart at most.
        """
        count = self.sizes["W9"]

        def figures() -> Figures:
            return {**self._drain(noop, 1, DEFAULT_THREADS), **self._pickups()}

        def once() -> tuple[Figures, Figures]:
            empty = figures()
            self._reset()
            self._history_after = self._load_history(count)
            try:
                return figures(), empty
            finally:
                self._history_after = None

        full, empty = self._compare("W9", once)
        history = f"with {count:,} done and dead jobs"
        self._add(
            "W9",
            f"W3 default concurrency {history}",
            full,
            empty,
            [("drain rate", "jobs/s", HIGHER, ">= 0.9x")],
            kind=EMPTY_TABLE,
        )
        self._add(
            "W9",
            f"W4 pickup {history}",
            full,
            empty,
            [("p50", "ms", LOWER, "~ 1x"), ("p95", "ms", LOWER, "~ 1x")],
            kind=EMPTY_TABLE,
            cpu=False,
        )

    def w11(self) -> None:
        """W11: a CSV imported through an ingest pipeline by a worker, beside one COPY of its
        rows into the same table; and the worker's memory at 10 % of the rows and at the end."""
        rows = self.sizes["W11"]
        checkpoint = max(1, int(rows * CHECKPOINT))
        path = self._catalog(rows)

        def once(catalog: Pipeline) -> tuple[Figures, Figures]:
            return self._import(catalog, path, rows, checkpoint), self._floor_copy(path, rows)

        with declared(self._storage) as catalog:
            litejobs, floor_stats = self._compare("W11", lambda: once(catalog))
        variant = (
            f"{rows:,}-row CSV through a drop and an enrich step into a table (an upsert per "
            f"row), pages of {PAGE:,} rows, one worker"
        )
        self._add("W11", variant, litejobs, floor_stats, [("rate", "records/s", HIGHER, ">= 0.3x")])
        self._add_growth("W11", f"{variant}: the worker's", litejobs, f"{checkpoint:,} rows")

    def w11f(self) -> None:
        """W11F: records buffered through one ``feed()`` call, beside one COPY of the same
        records into the same buffer table."""
        count = self.sizes["W11F"]
        records = files.records(count)

        def figures(seconds: float, cpu: float) -> Figures:
            return {"rate": count / seconds, "cpu": _per(cpu, count)}

        def once(catalog: Pipeline) -> tuple[Figures, Figures]:
            self._reset()
            litejobs = figures(*_timed_cpu(lambda: catalog.feed(records)))
            self._check_buffered(count)
            self._reset()
            now = clock.now()
            floor_figures = figures(
                *_timed_cpu(lambda: floor.copy_buffer(self.sql, catalog.name, records, now))
            )
            self._check_buffered(count)
            return litejobs, floor_figures

        with declared() as catalog:
            litejobs, floor_stats = self._compare("W11F", lambda: once(catalog))
        variant = f"{count:,} records through one feed() call (one transaction)"
        self._add("W11F", variant, litejobs, floor_stats, [("rate", "records/s", HIGHER, "")])

    def w12(self) -> None:
        """W12: a report's CSV export run by a worker to file-system storage, beside one
        ``COPY ... TO STDOUT`` of the same rows into a file; and the worker's peak memory
        exporting the full size and a tenth of it, each in a fresh worker."""
        rows = self.sizes["W12"]
        if rows < MIN_EXPORT:
            raise BenchError(f"W12 exports at least {MIN_EXPORT} rows; got W12={rows}.")
        tenth = rows // 10
        self._exports(rows, tenth)

        def once(bench_report: Declared) -> tuple[Figures, Figures]:
            small = self._export(bench_report, sales.SMALL, tenth)
            litejobs = self._export(bench_report, sales.LARGE, rows)
            litejobs["peak RSS at checkpoint"] = small["peak RSS"]
            return litejobs, self._floor_export(rows)

        with exports.declared() as bench_report, exports.reporting_to(self._export_storage):
            litejobs, floor_stats = self._compare("W12", lambda: once(bench_report))
        variant = (
            f"{rows:,}-row CSV export of a report ({len(sales.COLUMNS)} columns), pages of "
            f"{exports.PAGE_SIZE:,} rows, one worker, to file-system storage"
        )
        self._add("W12", variant, litejobs, floor_stats, [("rate", "rows/s", HIGHER, ">= 0.3x")])
        self._add(
            "W12",
            f"{variant}: the worker's peak RSS",
            {"peak RSS": litejobs["peak RSS"]},
            {"peak RSS": litejobs["peak RSS at checkpoint"]},
            [("peak RSS", "MB", LOWER, "<= 1.05x (growth <= 5 %)")],
            kind=f"a fresh worker exporting {tenth:,} rows",
            cpu=False,
        )

    def w13(self) -> None:
        """W13: a fenced lock taken and released, pair after pair, from one process."""
        count = self.sizes["W13"]

        def once() -> tuple[Figures, Figures]:
            self._reset()
            litejobs = locking.lock_pairs(self.scratch.alias, count)
            return litejobs, locking.floor_pairs(self.sql, count)

        litejobs, floor_stats = self._compare("W13", once)
        self._add(
            "W13",
            f"{count:,} litejobs.lock() blocks, acquire + release",
            litejobs,
            floor_stats,
            [
                ("round trips", "per pair", LOWER, "<= 2"),
                ("p50", "ms", LOWER, ""),
                ("p95", "ms", LOWER, ""),
            ],
            cpu=False,
        )

    def w14(self) -> None:
        """W14: a batch's children drained by a worker; from its last child's end to its
        callback's start, beside one job's pickup by the same worker once it is idle."""
        count = self.sizes["W14"]
        litejobs, baseline = self._compare("W14", self._batch_callback)
        self._add(
            "W14",
            f"{count:,}-child batch, {DEFAULT_THREADS} threads: last child's end to its callback",
            litejobs,
            baseline,
            [("latency", "ms", LOWER, "<= 1000 ms")],
            kind="one job's pickup (enqueue to body) by the idle worker",
            cpu=False,
        )

    # litejobs' side ----------------------------------------------------------------------

    def _reset(self) -> None:
        """Empty the litejobs tables (W9: down to its history rows)."""
        tables = [
            model._meta.db_table
            for model in apps.get_app_config("litejobs").get_models()
            if model._meta.managed and not model._meta.proxy
        ]
        if self._history_after is None:
            self.sql.execute(
                sql.SQL("TRUNCATE {} RESTART IDENTITY CASCADE").format(
                    sql.SQL(", ").join(map(sql.Identifier, tables))
                )
            )
            return
        job_table = Job._meta.db_table
        self.sql.execute(
            sql.SQL("DELETE FROM {} WHERE id > %s").format(sql.Identifier(job_table)),
            (self._history_after,),
        )
        others = [table for table in tables if table != job_table]
        # CASCADE: project tables may reference litejobs rows (the demo's payouts do).
        self.sql.execute(
            sql.SQL("TRUNCATE {} CASCADE").format(sql.SQL(", ").join(map(sql.Identifier, others)))
        )

    def _enqueue_many(self, definition: JobDefinition, arguments: list[dict[str, Any]]) -> int:
        """Enqueue in pages of ``enqueue_many``'s maximum, one transaction; the first id."""
        with transaction.atomic(using=self.scratch.alias):
            return min(
                answer.id
                for start in range(0, len(arguments), MAX_BATCH)
                for answer in definition.enqueue_many(arguments[start : start + MAX_BATCH])
            )

    def _drain(self, definition: JobDefinition, processes: int, threads: int) -> Figures:
        """Enqueue W3's jobs (untimed), then time workers draining them."""
        self._reset()
        count = self.sizes["W3"]
        first = self._enqueue_many(definition, [{"n": n} for n in range(count)])
        specs = [self._spec("worker", threads) for _ in range(processes)]
        rate, cpu = self._timed_drain(specs, Job._meta.db_table, first, count)
        return {"drain rate": rate, "cpu": _per(cpu, count)}

    def _soak(self, count: int, checkpoint: int) -> tuple[Figures, dict[str, Any]]:
        """W6 on litejobs: the drain rate and CPU, and each worker's peak and current RSS at
        ``checkpoint`` jobs done (by all of them) and at the end."""
        self._reset()
        first = self._enqueue_many(noop, [{"n": n} for n in range(count)])
        specs = [self._spec("worker", 1) for _ in range(SOAK_PROCESSES)]
        timeout = 60 + count / 20
        with self._started(specs) as children:
            # A measurement: finished_at is written by the children, on this machine's clock.
            started_at = time.time()
            for child in children:
                child.go()
            early = self._wait(
                f"{checkpoint:,} settled jobs",
                self._settled(children, checkpoint),
                children,
                timeout,
            )
            late = self._wait(
                f"{count:,} settled jobs", self._settled(children, count), children, timeout
            )
            finished_at = self._wait_finished(Job._meta.db_table, first, count, children)
            for child in children:
                child.stop()
        workers = [
            {
                **_growth("peak", before.peak_rss_bytes, after.peak_rss_bytes),
                **_growth("rss", before.rss_bytes, after.rss_bytes),
            }
            for before, after in zip(early, late, strict=True)
        ]
        figures = {
            "drain rate": count / (finished_at - started_at),
            "cpu": _per(sum(usage.cpu_seconds for usage in late), count),
            "peak RSS": max(w["peak_at_end_mb"] for w in workers),
            "peak RSS at checkpoint": max(w["peak_at_checkpoint_mb"] for w in workers),
            "RSS": max(w["rss_at_end_mb"] for w in workers),
            "RSS at checkpoint": max(w["rss_at_checkpoint_mb"] for w in workers),
        }
        return figures, {"checkpoint": checkpoint, "jobs": count, "workers": workers}

    @staticmethod
    def _settled(children: list[Child], count: int) -> Callable[[], list[Usage] | None]:
        """A probe: every worker's usage once they have settled ``count`` jobs together."""

        def probe() -> list[Usage] | None:
            usages = [child.usage() for child in children]
            return usages if sum(usage.count for usage in usages) >= count else None

        return probe

    def _catalog(self, rows: int) -> Path:
        """W11's CSV of ``rows`` rows (written once per size, untimed), in the folder the
        bench's storage serves here and in the workers started from now on."""
        if rows not in self._catalogs:
            folder = self.logs / f"catalog-{rows}"
            folder.mkdir()
            self._catalogs[rows] = files.write_catalog(folder, rows)
        folder = self._catalogs[rows].parent
        files.use_storage(self._storage, str(folder))
        self._django = replace(
            self._django, storage_alias=self._storage, storage_location=str(folder)
        )
        return self._catalogs[rows]

    def _import(self, catalog: Pipeline, path: Path, rows: int, checkpoint: int) -> Figures:
        """W11 on litejobs: a worker imports the CSV; the rate from ``go`` to the import's
        end, the worker's CPU per row, and its peak and current RSS at ``checkpoint`` rows
        and at the end."""
        self._reset()
        floor.reset_products(self.sql)
        run_id = catalog.import_file(path.name).pk
        timeout = 60 + rows / 200
        with self._started([self._spec("worker", DEFAULT_THREADS)]) as children:
            worker = children[0]
            # A measurement: finished_at is written by the child, on this machine's clock.
            started_at = time.time()
            worker.go()
            early, _ = self._wait(
                f"{checkpoint:,} imported rows",
                self._imported(run_id, worker, checkpoint),
                children,
                timeout,
            )
            late, finished_at = self._wait(
                f"{rows:,} imported rows", self._imported(run_id, worker), children, timeout
            )
            worker.stop()
        self._check_import(run_id, rows)
        return {
            "rate": rows / (finished_at - started_at),
            "cpu": _per(late.cpu_seconds, rows),
            "peak RSS": late.peak_rss_bytes / MEGABYTE,
            "peak RSS at checkpoint": early.peak_rss_bytes / MEGABYTE,
            "RSS": late.rss_bytes / MEGABYTE,
            "RSS at checkpoint": early.rss_bytes / MEGABYTE,
        }

    def _imported(
        self, run_id: int, worker: Child, rows: int | None = None
    ) -> Callable[[], tuple[Usage, float] | None]:
        """A probe: the worker's usage once ``rows`` rows are imported (and 0), or once the
        import is done (and when it finished)."""

        def probe() -> tuple[Usage, float] | None:
            state, imported, finished_at = _one(self.sql.execute(IMPORTED, (run_id,)))
            if state == ImportState.REFUSED:
                raise BenchError(f"W11's import was refused; the workers' logs are in {self.logs}.")
            if rows is None:
                return (worker.usage(), float(finished_at)) if state == ImportState.DONE else None
            return (worker.usage(), 0.0) if imported >= rows else None

        return probe

    def _check_import(self, run_id: int, rows: int) -> None:
        """Refuse an import that did not write what the file holds."""
        query = sql.SQL(IMPORT_COUNTS).format(products=sql.Identifier(floor.PRODUCTS))
        counts = _one(self.sql.execute(query, (run_id,)))
        dropped = files.discontinued(rows)
        expected = (rows - dropped, dropped, 0, 0, rows - dropped)
        if counts != expected:
            raise BenchError(
                f"W11's import of {rows:,} rows accepted, dropped, errored, refused and wrote "
                f"{counts}, not {expected}; the workers' logs are in {self.logs}."
            )

    def _exports(self, rows: int, tenth: int) -> None:
        """W12's table filled (untimed), and the storage its outputs go to, here and in the
        workers started from now on."""
        sales.fill(self.sql, rows, tenth)
        folder = self.logs / "exports"
        folder.mkdir(exist_ok=True)
        self._export_storage = f"{self._storage}-exports"
        files.use_storage(self._export_storage, str(folder))
        self._django = replace(
            self._django, storage_alias=self._export_storage, storage_location=str(folder)
        )

    def _export(self, bench_report: Declared, tenant: str, rows: int) -> Figures:
        """W12 on litejobs: ``tenant``'s rows exported by a fresh worker; the rate from the
        request to the run's end, the worker's CPU per row and its peak RSS."""
        self._reset()
        try:
            user = exports.reader(self.scratch.alias, tenant)
        except DatabaseError as error:
            raise BenchError(
                f"W12 requests its exports as a user named {tenant!r}; the project's user model "
                f"refused one with only a username ({error})."
            ) from error
        with self._started([self._spec("worker", DEFAULT_THREADS)]) as children:
            worker = children[0]
            worker.go()
            self._wait_for_workers(1, children)
            # A measurement: finished_at is written by the child, on this machine's clock.
            started_at = time.time()
            run = bench_report.request(user=user, params={})
            if not isinstance(run, ReportRun):
                raise BenchError(f"W12's export of {rows} rows was answered within the request.")
            finished_at = self._wait(
                f"{rows:,} exported rows", self._exported(run.pk), children, 60 + rows / 2000
            )
            usage = worker.usage()
            worker.stop()
        self._check_export(run.pk, rows)
        return {
            "rate": rows / (finished_at - started_at),
            "cpu": _per(usage.cpu_seconds, rows),
            "peak RSS": usage.peak_rss_bytes / MEGABYTE,
        }

    def _exported(self, run_id: int) -> Callable[[], float | None]:
        """A probe: when the run finished, once it is done."""

        def probe() -> float | None:
            state, why, finished_at = _one(self.sql.execute(EXPORTED, (run_id,)))
            if state == ReportState.DONE:
                return float(finished_at)
            if state not in (ReportState.QUEUED, ReportState.RUNNING):
                raise BenchError(
                    f"W12's run ended {state} ({why.strip()}); the workers' logs are in "
                    f"{self.logs}."
                )
            return None

        return probe

    def _check_export(self, run_id: int, rows: int) -> None:
        """Refuse an export whose output does not hold its header and every row; then remove
        it (the next round writes another)."""
        run = ReportRun.objects.using(self.scratch.alias).get(pk=run_id)
        files = storage.get(run.storage)
        lines = exports.output_lines(files, run.output_path)
        storage.remove(files, run.output_path)
        if (run.row_count, lines) != (rows, rows + 1):
            raise BenchError(
                f"W12's run of {rows:,} rows recorded {run.row_count:,} rows and wrote "
                f"{lines:,} lines (a header and a line per row expected)."
            )

    def _check_buffered(self, count: int) -> None:
        """Refuse a feed (or its floor) that did not buffer every record."""
        buffered = _one(self.sql.execute(BUFFERED))[0]
        if buffered != count:
            raise BenchError(f"W11F buffered {buffered} of {count} records.")

    def _pickups(self) -> Figures:
        """W4 on litejobs: enqueue one job at a time to an idle worker."""
        self._reset()
        samples = self.sizes["W4"]
        with self._started([self._spec("worker", DEFAULT_THREADS)]) as children:
            children[0].go()
            self._wait_for_workers(1, children)
            first: int | None = None
            for n in range(samples):
                # A measurement: the worker compares its time.time() with this one.
                enqueued = pickup.enqueue(n=n, sent=time.time())
                first = first or enqueued.id
                time.sleep(PICKUP_INTERVAL)
            self._wait_finished(Job._meta.db_table, first, samples, children)
            children[0].stop()
        return _latency_figures([row[0] for row in self.sql.execute(LATENCIES, (first,))])

    def _batch_callback(self) -> tuple[Figures, Figures]:
        """W14 on litejobs: enqueue a batch of no-op children (untimed), drain it, and read
        how long after its last child ended its callback started; then one job's pickup."""
        self._reset()
        count = self.sizes["W14"]
        with batch(on_complete=batch_done) as opened:
            for start in range(0, count, MAX_BATCH):
                noop.enqueue_many([{"n": n} for n in range(start, min(count, start + MAX_BATCH))])
        with self._started([self._spec("worker", DEFAULT_THREADS)]) as children:
            children[0].go()
            gap = self._wait(
                f"batch {opened.id}'s callback",
                lambda: self._callback_gap(opened.id),
                children,
                60 + count / 20,
            )
            # A measurement: the worker compares its time.time() with this one.
            enqueued = pickup.enqueue(n=0, sent=time.time())
            self._wait_finished(Job._meta.db_table, enqueued.id, 1, children)
            children[0].stop()
        [picked] = [row[0] for row in self.sql.execute(LATENCIES, (enqueued.id,))]
        return {"latency": gap}, {"latency": float(picked)}

    def _callback_gap(self, batch_id: int) -> float | None:
        """Milliseconds from the batch's last child's end to its callback's start, once its
        callback has run."""
        row = self.sql.execute(CALLBACK_GAP, (batch_id,)).fetchone()
        return None if row is None else float(row[0])

    def _delayed_pickups(self) -> Figures:
        """W10 on litejobs: jobs with staggered run_at enqueued to an idle worker."""
        self._reset()
        samples = self.sizes["W10"]
        low, high = DELAYS_MS
        with self._started([self._spec("worker", DEFAULT_THREADS)]) as children:
            children[0].go()
            self._wait_for_workers(1, children)
            first: int | None = None
            for n in range(samples):
                ahead = timedelta(milliseconds=low + (n * 197) % (high - low + 1))
                run_at = clock.now() + ahead
                enqueued = delayed.enqueue(n=n, due=run_at.timestamp(), run_at=run_at)
                first = first or enqueued.id
                time.sleep(DELAYED_INTERVAL)
            self._wait_finished(Job._meta.db_table, first, samples, children)
            children[0].stop()
        return _latency_figures([row[0] for row in self.sql.execute(LATENESS, (first,))])

    def _load_history(self, count: int) -> int:
        """Insert ``count`` done and dead jobs in one statement; answers the last id."""
        self.sql.execute(HISTORY, {"name": noop.name, "queue": QUEUE, "count": count})
        self.sql.execute(sql.SQL("VACUUM (ANALYZE) {}").format(sql.Identifier(Job._meta.db_table)))
        last: int = _one(
            self.sql.execute(
                sql.SQL("SELECT max(id) FROM {}").format(sql.Identifier(Job._meta.db_table))
            )
        )[0]
        return last

    # The floor's side --------------------------------------------------------------------

    def _floor_drain(self, processes: int, threads: int, count: int | None = None) -> Figures:
        floor.reset(self.sql)
        count = count or self.sizes["W3"]
        first = floor.fill(self.sql, count)
        specs = [self._spec("drain", threads) for _ in range(processes)]
        rate, cpu = self._timed_drain(specs, floor.TABLE, first, count)
        return {"drain rate": rate, "cpu": _per(cpu, count)}

    def _floor_copy(self, path: Path, rows: int) -> Figures:
        floor.reset_products(self.sql)
        seconds, cpu = _timed_cpu(lambda: floor.copy_file(self.sql, path))
        return {"rate": rows / seconds, "cpu": _per(cpu, rows)}

    def _floor_export(self, rows: int) -> Figures:
        path = self.logs / "exports" / "floor.csv"
        seconds, cpu = _timed_cpu(lambda: floor.export_csv(self.sql, path, sales.LARGE))
        with path.open("rb") as file:
            lines = exports.lines(file)
        path.unlink()
        if lines != rows + 1:
            raise BenchError(f"W12's floor wrote {lines:,} lines for {rows:,} rows.")
        return {"rate": rows / seconds, "cpu": _per(cpu, rows)}

    def _floor_pickups(self, samples: int | None = None) -> Figures:
        floor.reset(self.sql)
        samples = samples or self.sizes["W4"]
        with self._started([self._spec("listen")]) as children:
            listener = children[0]
            listener.go()
            for n in range(samples):
                # A measurement: the listener compares its time.time() with this one.
                floor.insert_and_notify(self.sql, n, time.time())
                time.sleep(PICKUP_INTERVAL)
            self._wait("the floor's notifications", lambda: listener.count() >= samples or None)
            latencies = listener.stop()
        return _latency_figures(latencies)

    # Both sides --------------------------------------------------------------------------

    def _timed_drain(
        self, specs: list[ChildSpec], table: str, first: int, count: int
    ) -> tuple[float, float]:
        """Start the drainers; jobs/s from ``go`` to the last ``finished_at``, and the CPU
        seconds the drainers spent from ``go`` until the bench saw the last job done."""
        with self._started(specs) as children:
            # A measurement: finished_at is written by the children, on this machine's clock.
            started_at = time.time()
            for child in children:
                child.go()
            finished_at = self._wait_finished(table, first, count, children)
            cpu = sum(child.usage().cpu_seconds for child in children)
            for child in children:
                child.stop()
        return count / (finished_at - started_at), cpu

    def _idle(self) -> tuple[Figures, Figures]:
        """W5: an idle worker and the idle floor side by side; statements per minute each."""
        self._reset()
        floor.reset(self.sql)
        client = self.w5_method == CLIENT
        specs = [
            self._spec("worker", DEFAULT_THREADS, count_statements=client),
            self._spec("idle", count_statements=client),
        ]
        with self._started(specs) as children:
            for child in children:
                child.go()
            self._wait_for_workers(1, children)
            time.sleep(SETTLE)
            before = self._statements(children)
            time.sleep(self.options.idle_seconds)
            after = self._statements(children)
            for child in children:
                child.stop()
        per_minute = 60 / self.options.idle_seconds
        worker, idle = ((a - b) * per_minute for a, b in zip(after, before, strict=True))
        return {"statements": worker}, {"statements": idle}

    def _statement_method(self) -> tuple[str, str]:
        """How W5 counts: ``pg_stat_statements`` when the server loads it, else client-side."""
        preload = _one(self.sql.execute("SHOW shared_preload_libraries"))[0]
        if "pg_stat_statements" in preload:
            try:
                self.sql.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            except psycopg.Error as error:
                why = f"CREATE EXTENSION pg_stat_statements failed: {error}".strip()
            else:
                return SERVER, "pg_stat_statements (calls in the scratch database)"
        else:
            why = "pg_stat_statements is not in the server's shared_preload_libraries"
        return CLIENT, (
            "client-side: psycopg execute() calls plus BEGIN/COMMIT per transaction, counted "
            f"inside each process ({why})"
        )

    def _statements(self, children: list[Child]) -> tuple[int, int]:
        """Statements so far: (the worker's, the idle floor's)."""
        if self.w5_method == CLIENT:
            return cast(tuple[int, int], tuple(child.count() for child in children))
        return cast(
            tuple[int, int],
            tuple(_one(self.sql.execute(STATEMENTS, {"floor": f"%{floor.TABLE}%"}))),
        )

    def _wait_finished(
        self, table: str, first: int | None, count: int, children: list[Child]
    ) -> float:
        """Wait until ``count`` rows from id ``first`` are done; answers the last finished_at."""
        progress = sql.SQL(PROGRESS).format(table=sql.Identifier(table))

        def finished() -> float | None:
            done, other, last = _one(self.sql.execute(progress, (first,)))
            if other:
                raise BenchError(
                    f"{other} bench jobs in {table} ended other than done; the workers' logs "
                    f"are in {self.logs}."
                )
            return float(last) if done >= count else None

        # The probe counts every row of the run: a big run polls less often, so the bench's
        # own queries stay a small part of the server's work.
        poll = POLL * max(1.0, count / 10_000)
        last: float = self._wait(
            f"{count:,} jobs in {table}", finished, children, 60 + count / 20, poll
        )
        return last

    def _wait_for_workers(self, count: int, children: list[Child]) -> None:
        """Wait until ``count`` workers have written their Worker row (they LISTEN by then)."""
        query = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(WorkerRow._meta.db_table))
        self._wait(
            "the worker to start",
            lambda: _one(self.sql.execute(query))[0] >= count or None,
            children,
        )

    def _wait(
        self,
        what: str,
        probe: Callable[[], Any],
        children: Iterable[Child] = (),
        timeout: float = 60.0,
        poll: float = POLL,
    ) -> Any:
        """Poll ``probe`` until it answers something other than None; checks the children."""
        deadline = time.monotonic() + timeout
        while (answer := probe()) is None:
            for child in children:
                child.check()
            if time.monotonic() > deadline:
                raise BenchError(f"Timed out after {timeout:.0f} s waiting for {what}.")
            time.sleep(poll)
        return answer

    def _spec(self, role: str, threads: int = 1, count_statements: bool = False) -> ChildSpec:
        return ChildSpec(
            role=role,
            log_path=str(self.logs / f"{next(self._children):03d}-{role}.log"),
            threads=threads,
            params=self.params,
            django=self._django if role == "worker" else None,
            heartbeat=litejobs_settings.duration("HEARTBEAT").total_seconds(),
            count_statements=count_statements,
        )


def _one(cursor: psycopg.Cursor[Any]) -> tuple[Any, ...]:
    """The row of a statement that always answers one (an aggregate, ``SHOW``)."""
    return cast(tuple[Any, ...], cursor.fetchone())


def _growth(name: str, before: int, after: int) -> dict[str, float]:
    """A worker's memory figure at the checkpoint and at the end, in MB, and its growth."""
    return {
        f"{name}_at_checkpoint_mb": before / MEGABYTE,
        f"{name}_at_end_mb": after / MEGABYTE,
        f"{name}_growth_percent": (after / before - 1) * 100,
    }


def _tagged(pair: tuple[Figures, Figures]) -> dict[tuple[str, str], float]:
    litejobs, floor_figures = pair
    return {
        **{("litejobs", figure): value for figure, value in litejobs.items()},
        **{("floor", figure): value for figure, value in floor_figures.items()},
    }


def rate_figures(started: list[float], limit: int, per: float) -> Figures:
    """A binding rate's figures from the start instants (seconds, ascending): the start rate
    past the first window, and the most starts any window of ``per`` holds."""
    ahead = 0
    most = 0
    for behind, start in enumerate(started):
        while ahead < len(started) and started[ahead] < start + per:
            ahead += 1
        most = max(most, ahead - behind)
    span = started[-1] - started[0]
    return {
        "start rate": (len(started) - limit) / span if span > 0 else 0.0,
        "most starts in any 1 s": float(most),
    }


def fleet_rate_jobs(size: int) -> int:
    """The binding rate's job count: W3's size, and at least three windows' worth."""
    return max(size, 3 * FLEET_RATE)
