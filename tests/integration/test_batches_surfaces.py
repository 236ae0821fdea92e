"""A batch as operators see it: ``batch show --json``, the admin's pages, the hold-up of its
held callback, and its metric families."""

from __future__ import annotations

import json

import pytest

import litejobs
from litejobs.batches import metrics
from litejobs.jobs import operations
from tests.integration.test_cli import failing
from tests.integration.test_cli import litejobs as run_verb
from tests.testapp.batchjobs import child, summary

pytestmark = pytest.mark.django_db(transaction=True)


def open_batch():
    with litejobs.batch(on_complete=summary, label="nightly") as b:
        child.enqueue(label="s1")
        gone = child.enqueue(label="s2")
    operations.cancel(gone.id, by="test")
    return b


def test_batch_show_json_gives_counts_children_and_callback(clock):
    b = open_batch()
    out, _ = run_verb("batch", "show", str(b.id), "--json")
    data = json.loads(out)
    assert data["label"] == "nightly" and data["state"] == "open"
    assert (data["total"], data["pending"]) == (2, 1)
    assert data["counts"] == {"done": 0, "dead": 0, "cancelled": 1}
    assert data["children_by_state"] == {"cancelled": 1, "ready": 1}
    assert data["on_complete"]["job"] == summary.name
    assert data["on_complete"]["state"] == "waiting"
    text, _ = run_verb("batch", "show", str(b.id))
    assert "1 left" in text


def test_batch_show_of_an_unknown_batch_is_refused(clock):
    out, _ = failing(1, "batch", "show", "424242", "--json")
    assert json.loads(out)["code"] == "batch-unknown"


def test_a_held_callback_says_it_waits_for_the_batch(clock):
    b = open_batch()
    callback = b.record().on_complete_job_id
    out, _ = run_verb("show", str(callback), "--json")
    waiting = json.loads(out)["waiting"]
    assert waiting["code"] == "batch-callback"
    assert (waiting["batch"], waiting["children_left"]) == (b.id, 1)


def test_the_admin_lists_and_shows_a_batch(admin_client, clock):
    b = open_batch()
    listing = admin_client.get("/admin/litejobs/batch/")
    # The held callback's run_at is a placeholder, never shown as a date.
    jobs = admin_client.get("/admin/litejobs/job/").content.decode()
    assert "when released" in jobs and "9999" not in jobs and "30 Dec" not in jobs
    assert listing.status_code == 200 and b"1 of 2 ended" in listing.content
    page = admin_client.get(f"/admin/litejobs/batch/{b.id}/change/")
    assert page.status_code == 200
    assert b"1 cancelled, 1 ready" in page.content
    assert summary.name.encode() in page.content


def test_metrics_count_batches_and_their_completion_latency(clock, run_worker):
    b = open_batch()
    run_worker()
    run_worker()
    families = {family.name: family for family in metrics.families(clock.now())}
    assert families["litejobs_batches"].samples == [(("completed",), 1)]
    [(labels, seconds)] = families["litejobs_batch_completion_latency_seconds"].samples
    assert labels == (str(b.id),) and seconds >= 0
