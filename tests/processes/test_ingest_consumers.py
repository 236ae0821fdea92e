"""A real worker running a consumer, killed with SIGKILL between two batches and inside one
(its records fed, its position not yet stored)."""

from __future__ import annotations

import os
import signal

import psycopg
import pytest
from django.db import connection

from litejobs.core.enums import JobState
from litejobs.models import IngestPosition, Job, SetAsideRecord
from tests import database
from tests.conftest import wait_for
from tests.ingest_helpers import SOURCE_VARIABLE, Source, buffered, landed, skus
from tests.testapp.pipelines import catalog

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FAST = {"LEASE": "3s", "HEARTBEAT": "1s", "POLL_INTERVAL": "2s"}

#: A backend waiting for a lock in the statement that moves a consumer's position.
WAITING_TO_MOVE = """
SELECT count(*) FROM pg_stat_activity
WHERE wait_event_type = 'Lock' AND query LIKE '%%INSERT INTO litejobs_ingestposition%%'
"""


def kill(process) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(10)


def test_a_consumer_killed_between_batches_and_inside_one_reads_again_only_that_batch(
    processes, tmp_path
):
    source = Source(tmp_path / "source", size=60)
    env = processes.env(**FAST)
    env[SOURCE_VARIABLE] = str(source.folder)
    between, inside = source.hold(21), source.hold(41)
    catalog.consume("vendor-a")

    # Between batches: pages 1-10 and 11-20 are committed, the fetch of 21-30 is under way.
    first = processes.start("runworker", "--concurrency", "2", env=env, name="worker")
    wait_for(lambda: source.held(21), timeout=60, what="the fetch of page 21-30")
    assert catalog.position("vendor-a") == 20
    kill(first)
    between.unlink()

    # Inside a batch: 41-50 are fed in its transaction, whose position move waits for a lock
    # this test holds on the position's row when the worker dies.
    second = processes.start("runworker", "--concurrency", "2", env=env, name="worker")
    wait_for(lambda: source.held(41), timeout=60, what="the re-run to fetch page 41-50")
    url = database.url_from_settings(connection.settings_dict)
    with psycopg.connect(url) as holder, psycopg.connect(url, autocommit=True) as watcher:
        holder.execute("SELECT 1 FROM litejobs_ingestposition WHERE key = 'vendor-a' FOR UPDATE")
        inside.unlink()
        wait_for(
            lambda: watcher.execute(WAITING_TO_MOVE).fetchone()[0] == 1,
            timeout=30,
            what="the batch 41-50 to be fed and its position move to wait",
        )
        kill(second)
        holder.rollback()
    assert catalog.position("vendor-a") == 40
    assert not set(skus(41, 50)) & (set(buffered()) | set(landed()))

    processes.start("runworker", "--concurrency", "2", env=env, name="worker")
    wait_for(
        lambda: not Job.objects.exclude(state=JobState.DONE).exists() and not buffered(),
        timeout=60,
        what="the consumer and its drains to finish",
    )

    # Each page read once, but the two that were not committed when a worker died.
    assert source.reads() == [
        (1, 10), (11, 20), (21, 30), (21, 30), (31, 40), (41, 50), (41, 50), (51, 60), (61, 60),
    ]  # fmt: skip
    # Every record landed exactly once: no batch was fed twice, none was lost.
    assert landed() == dict.fromkeys(skus(1, 60), 1)
    assert catalog.stats()["accepted"] == 60
    assert not SetAsideRecord.objects.exists()
    stored = IngestPosition.objects.get(pipeline="tests.catalog", key="vendor-a")
    assert (stored.position, stored.batches) == (60, 6)
    [run] = Job.objects.filter(name="litejobs.ingest_consume")
    assert (run.state, run.attempts) == (JobState.DONE, 3)
