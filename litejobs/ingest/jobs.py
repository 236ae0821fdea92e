"""The jobs of ingest pipelines, declared when litejobs' app is ready (not when ``litejobs``
is imported: a job's declaration reads the settings, which a project's settings module may
still be defining): the drain of a pipeline's buffer, a file import and a consumer's run."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from ..conf import settings
from ..core.retry import Retry
from ..jobs.arguments import Concurrency
from ..jobs.context import JobContext
from ..jobs.declarations import job, queue_name
from . import consumers, draining, imports
from .declarations import CONSUME_JOB, DRAIN_JOB, IMPORT_JOB

__all__ = ["consume", "drain", "run_import"]

#: The queue of the three jobs (read once, at declaration; litejobs.E020 reports a bad value).
QUEUE = settings.or_default("INGEST_QUEUE", queue_name)


@job(
    name=DRAIN_JOB,
    queue=QUEUE,
    # A key per lane: a feed wakes lane a, or lane b while a runs (see draining).
    key=lambda pipeline, lane: f"ingest:{pipeline}:{lane}",
    concurrency=Concurrency(key=lambda pipeline: f"ingest:{pipeline}", limit=1),
    atomic=False,
    timeout=draining.BUDGET + timedelta(minutes=3),
    retry=Retry(attempts=20, backoff="exponential", base="1s", max="1m"),
)
def drain(ctx: JobContext, pipeline: str, lane: str) -> dict[str, int]:
    """Empty a pipeline's buffer, a batch per transaction."""
    return draining.drain(ctx, pipeline, lane)


@job(
    name=IMPORT_JOB,
    queue=QUEUE,
    key=lambda run_id: f"ingest-import:{run_id}",
    atomic=False,
    timeout="2h",
    retry=Retry(attempts=10, backoff="exponential", base="5s", max="5m"),
    # Version 1 named the storage too; the pipeline's declared files name it now.
    version=2,
    upgrade={1: lambda arguments: {"run_id": arguments["run_id"]}},
)
def run_import(ctx: JobContext, run_id: int) -> dict[str, Any]:
    """Import a file, a page per transaction, from its last committed offset."""
    return imports.run_import(ctx, run_id)


@job(
    name=CONSUME_JOB,
    queue=QUEUE,
    # A key per lane, one run per consumer at a time: a run that spent its budget hands over
    # to the other lane, and consume() while one runs enqueues the other (see consumers).
    key=lambda pipeline, consumer, lane: (
        f"ingest-consume:{consumers.label(pipeline, consumer)}:{lane}"
    ),
    concurrency=Concurrency(
        key=lambda pipeline, consumer: f"ingest-consume:{consumers.label(pipeline, consumer)}",
        limit=1,
    ),
    atomic=False,
    timeout=consumers.BUDGET + timedelta(minutes=3),
    retry=Retry(attempts=20, backoff="exponential", base="1s", max="1m"),
)
def consume(ctx: JobContext, pipeline: str, consumer: str, lane: str) -> dict[str, int]:
    """Fetch and feed a consumer's batches, each with its position, until caught up."""
    return consumers.consume(ctx, pipeline, consumer, lane)
