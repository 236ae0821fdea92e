"""Real workers killed with SIGKILL in the middle of an ingest pipeline's work."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from litejobs.models import BufferedRecord, ImportRun
from tests.conftest import wait_for
from tests.testapp import pipelines
from tests.testapp.models import Product
from tests.testapp.pipelines import record

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FAST = {"LEASE": "3s", "HEARTBEAT": "1s", "POLL_INTERVAL": "2s"}


def test_a_drain_killed_mid_batch_writes_every_record_exactly_once(processes, tmp_path):
    gate = tmp_path / "gate"
    records = [record(f"P{n:03}") for n in range(120)]
    records[70]["gate"] = str(gate)  # in the second batch of 50
    pipelines.catalog.feed(records)

    first = processes.worker("--queues", "ingest", "--concurrency", "1", **FAST)
    wait_for(lambda: Path(f"{gate}.started.1").exists(), timeout=60, what="the gated record")
    assert Product.objects.count() == 50  # the first batch committed, the second is open
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(10)
    assert BufferedRecord.objects.count() == 70  # the open batch is still buffered

    gate.touch()
    processes.worker("--queues", "ingest", "--concurrency", "1", **FAST)
    wait_for(lambda: Product.objects.count() == 120, timeout=60, what="every record")
    wait_for(lambda: not BufferedRecord.objects.exists(), timeout=10, what="an empty buffer")
    assert set(Product.objects.values_list("writes", flat=True)) == {1}
    assert pipelines.catalog.stats() == {"accepted": 120, "dropped": {}, "errored": 0}


def test_an_import_killed_midway_resumes_at_its_offset_without_loss_or_duplicates(
    processes, tmp_path, settings
):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    gate = tmp_path / "gate"
    rows = [f"P{n:04},Name {n},10,EUR,active" for n in range(1000)]
    # The gated row's sink waits inside its page's transaction.
    rows[170] = 'P0170,"Gated, with a\nnewline",10,EUR,active'
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage

    name = default_storage.save(
        "feeds/catalog.csv",
        ContentFile(("sku,name,price,currency,status\n" + "\n".join(rows)).encode()),
    )
    pipelines.GATES["P0170"] = str(gate)
    run = pipelines.catalog.import_file(name)

    env = processes.env(**FAST)
    env["LITEJOBS_TEST_MEDIA_ROOT"] = settings.MEDIA_ROOT
    env["LITEJOBS_TEST_GATES"] = f"P0170={gate}"
    first = processes.start("runworker", "--queues", "ingest", env=env, name="worker")
    wait_for(lambda: Path(f"{gate}.started.1").exists(), timeout=60, what="the gated row")
    run.refresh_from_db()
    # What committed is exactly what the committed offset covers; the gated page is open.
    assert 0 < Product.objects.count() == run.accepted < 1000
    assert not Product.objects.filter(sku="P0170").exists()
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(10)

    gate.touch()
    processes.start("runworker", "--queues", "ingest", env=env, name="worker")
    wait_for(
        lambda: ImportRun.objects.get(pk=run.pk).state == "done", timeout=60, what="the import"
    )
    run.refresh_from_db()
    assert (run.accepted, run.refused, run.offset) == (1000, 0, run.size)
    assert Product.objects.count() == 1000
    assert set(Product.objects.values_list("writes", flat=True)) == {1}
    assert Path(f"{gate}.started.2").exists()  # the killed page ran again, from its start
