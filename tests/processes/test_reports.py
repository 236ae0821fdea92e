"""Report runs in real worker processes: a worker killed between pages and another resuming the
run at its next page, and a report's ``max_concurrent`` held across two workers."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psycopg
import pytest
from django.core.files.storage import default_storage
from django.db import connection

from litejobs.models import Job, ReportRun
from litejobs.reports import limits, storage
from tests import database
from tests.conftest import wait_for
from tests.reports_helpers import RANGE, reader, sales
from tests.testapp import reports
from tests.testapp.models import Sale

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FAST = {"LEASE": "3s", "HEARTBEAT": "1s", "POLL_INTERVAL": "2s"}
#: tests.sales reads pages of 5 rows: these many sales make a run of 400 pages, long enough to
#: kill its worker part-way.
SALES = 2000


@pytest.fixture
def worker_env(processes, tmp_path, settings):
    """The environment of workers writing report outputs where this test reads them."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
    env = processes.env(**FAST)
    env["LITEJOBS_TEST_MEDIA_ROOT"] = settings.MEDIA_ROOT
    return env


def start_worker(processes, env):
    return processes.start(
        "runworker", "--queues", "reports", "--concurrency", "1", env=env, name="worker"
    )


def output_lines(run: ReportRun) -> list[str]:
    with storage.Joined(default_storage, storage.parts_of(default_storage, run.output_path)) as f:
        return f.read().decode().splitlines()


def part_files(run: ReportRun, count: int) -> dict[str, tuple[bytes, int]]:
    """The first ``count`` parts of the run's output: each one's bytes and modification time."""
    found = {}
    for number in range(count):
        path = Path(default_storage.path(storage.part_name(run.output_path, number, "csv")))
        found[path.name] = (path.read_bytes(), path.stat().st_mtime_ns)
    return found


def test_a_worker_killed_mid_run_is_resumed_by_another_at_its_next_page(processes, worker_env):
    sales("north", SALES)
    run = reports.sales.request(user=reader("ann", "north"), params=RANGE)
    assert isinstance(run, ReportRun)

    first = start_worker(processes, worker_env)
    wait_for(
        lambda: ReportRun.objects.get(pk=run.pk).parts >= 60, timeout=60, what="60 parts written"
    )
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(10)
    killed_at = time.time_ns()
    run.refresh_from_db()
    # The killed worker recorded its last written page with the key it ended at.
    assert run.state == "running"
    assert 60 <= run.parts < 1 + SALES // 5
    assert run.row_count == (run.parts - 1) * 5
    written = part_files(run, run.parts)

    start_worker(processes, worker_env)
    wait_for(lambda: ReportRun.objects.get(pk=run.pk).state == "done", timeout=90, what="the run")
    resumed_at = run.parts
    run.refresh_from_db()
    assert (run.row_count, run.parts) == (SALES, 1 + SALES // 5)
    assert Job.objects.get(pk=run.job_id).attempts == 2
    # Every row exactly once, in key order, after the header: no page written twice.
    lines = output_lines(run)
    assert lines[0] == "number,customer,amount,status,note,formula,placed"
    numbers = [line.split(",")[0] for line in lines[1:]]
    assert numbers == list(Sale.objects.order_by("pk").values_list("number", flat=True))
    # The second worker went on at the next part: the parts recorded before the kill are the
    # killed worker's, untouched; every later one was written after the kill.
    assert part_files(run, resumed_at) == written
    later = part_files(run, run.parts)
    assert all(later[name][1] > killed_at for name in list(later)[resumed_at:])


@pytest.mark.parametrize("max_concurrent", [1, 2])
def test_max_concurrent_holds_across_worker_processes(processes, worker_env, max_concurrent):
    sales("north", SALES)
    setting = limits.current(reports.sales)
    setting.max_concurrent = max_concurrent
    setting.save()
    user = reader("ann", "north")
    ids = [reports.sales.request(user=user, params=RANGE).pk for _ in range(2)]

    def running() -> int:
        return ReportRun.objects.filter(pk__in=ids, state="running").count()

    # Every run that starts waits at its first read of the sales table, which this test holds
    # locked: however fast the workers are, the runs allowed at once are running together.
    url = database.url_from_settings(connection.settings_dict)
    with psycopg.connect(url) as holder:
        holder.execute("LOCK TABLE testapp_sale IN ACCESS EXCLUSIVE MODE")
        for _ in range(2):
            start_worker(processes, worker_env)
        wait_for(lambda: running() == max_concurrent, timeout=120, what="the runs allowed")
        # Each worker polls every 2 s: two polls later, no other run has started.
        time.sleep(5)
        assert running() == max_concurrent
        holder.rollback()

    wait_for(
        lambda: ReportRun.objects.filter(pk__in=ids, state="done").count() == 2,
        timeout=120,
        what="both runs",
    )
    first, second = sorted(ReportRun.objects.filter(pk__in=ids), key=lambda r: r.started_at)
    assert (second.started_at < first.finished_at) is (max_concurrent == 2)
    assert (first.row_count, second.row_count) == (SALES, SALES)
