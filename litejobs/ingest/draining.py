"""The drain: the job that takes a pipeline's buffered records, a batch per transaction.

One drain runs per pipeline at a time (its concurrency key), on two lanes: a feed wakes lane
``a``; when lane ``a`` is already running it wakes lane ``b``, which waits for ``a`` to end.
A feed holds a shared lock on its pipeline until it commits, and a drain that finds the
buffer empty finishes only once it holds that lock alone and has looked again, so no feed's
records are left behind by a drain that was running when they came.

A batch (``batch_size`` records, oldest first) is processed, its records removed from the
buffer, and its outcomes set aside and counted in one transaction: a worker killed midway
leaves the whole batch buffered, to be taken again.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import cast

from django.db import connections, transaction

from ..conf import settings
from ..jobs import catalog
from ..jobs.context import JobContext
from ..jobs.declarations import JobDefinition
from ..jobs.enqueue import Enqueued
from ..sql.cursors import fetch_all, fetch_one, hot_cursor, run_query
from .declarations import DRAIN_JOB, Declaration, pipelines
from .processing import Item, Tally, process

__all__ = ["BUDGET", "LANES", "drain", "enqueue_drain", "running", "wake"]

logger = logging.getLogger(__name__)

#: How long one drain job works before it hands over to the next lane (a job has a timeout).
BUDGET = timedelta(minutes=2)
#: The two lanes: at most one drain runs, and at most one waits behind it.
LANES = ("a", "b")


@dataclass
class _Totals:
    batches: int = 0
    accepted: int = 0
    dropped: int = 0
    errored: int = 0

    def add(self, tally: Tally) -> None:
        self.batches += 1
        self.accepted += tally.accepted
        self.dropped += sum(tally.dropped.values())
        self.errored += tally.errored


def drain(ctx: JobContext, pipeline: str, lane: str) -> dict[str, int]:
    """The drain job's body: process the pipeline's buffered records until the buffer is
    empty (or the budget is spent: the other lane then carries on)."""
    declaration: Declaration = pipelines[pipeline]
    totals = _Totals()
    started = time.monotonic()
    while not ctx.cancelled.is_set():
        tally = _batch(declaration)
        if tally is not None:
            totals.add(tally)
        elif _drained(declaration.name):
            break
        if time.monotonic() - started > BUDGET.total_seconds():
            _hand_over(declaration.name, lane)
            break
    ctx.check_cancelled()
    return totals.__dict__


def _batch(declaration: Declaration) -> Tally | None:
    """Take, process and remove one batch, in one transaction; None when none was buffered
    (or every buffered record is held by another transaction)."""
    alias = settings.DATABASE
    with transaction.atomic(using=alias), hot_cursor(connections[alias]) as cursor:
        run_query(
            cursor, "ingest_take", {"pipeline": declaration.name, "limit": declaration.batch_size}
        )
        rows = fetch_all(cursor)
        if not rows:
            return None
        tally = process(declaration, [Item(row["key"], row["payload"]) for row in rows])
        run_query(cursor, "ingest_remove", {"ids": [row["id"] for row in rows]})
        return tally


def _drained(pipeline: str) -> bool:
    """Whether the drain may finish: no feed is uncommitted and nothing is buffered. A feed
    still open makes the drain wait a moment and look again."""
    alias = settings.DATABASE
    with transaction.atomic(using=alias), hot_cursor(connections[alias]) as cursor:
        run_query(cursor, "ingest_drain_lock", {"pipeline": pipeline})
        alone = fetch_one(cursor)
        if not (alone and alone["alone"]):
            time.sleep(0.05)
            return False
        run_query(cursor, "ingest_drained", {"pipeline": pipeline})
        drained = fetch_one(cursor)
        return bool(drained and drained["drained"])


def _hand_over(pipeline: str, lane: str) -> None:
    """Enqueue the other lane to carry on after this job (it waits for this one to end)."""
    other = LANES[1 - LANES.index(lane)]
    with transaction.atomic(using=settings.DATABASE):
        enqueue_drain(pipeline, other)
    logger.info("Pipeline %s: drain handed over to lane %s after %s.", pipeline, other, BUDGET)


def enqueue_drain(pipeline: str, lane: str) -> Enqueued:
    """Enqueue a lane's drain job (declared in ``litejobs.ingest.jobs`` when litejobs' app
    is ready), in the caller's transaction."""
    definition = cast(JobDefinition, catalog.get(DRAIN_JOB))
    return definition.enqueue(pipeline=pipeline, lane=lane)


def wake(pipeline: str) -> None:
    """Make sure a drain will take what the caller's transaction fed: lane ``a``, or lane
    ``b`` when ``a`` is already running (its end might come before the feed commits)."""
    alias = settings.DATABASE
    for lane in LANES:
        enqueued = enqueue_drain(pipeline, lane)
        if not enqueued.deduped or not running(alias, enqueued.id):
            return
    # Both lanes running would break the one-drain-at-a-time concurrency limit.
    logger.error("Pipeline %s: both drain lanes are running; check its concurrency.", pipeline)


def running(alias: str, job_id: int) -> bool:
    """Whether the job ``job_id`` is running (a lane's job an enqueue deduplicated into)."""
    with hot_cursor(connections[alias]) as cursor:
        run_query(cursor, "ingest_job_running", {"id": job_id})
        row = fetch_one(cursor)
    return bool(row and row["running"])
