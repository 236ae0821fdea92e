"""Reports: a request answered within its budget or run by the worker page by page, to
tenant-scoped storage, downloaded through a short-lived signed link."""

from __future__ import annotations

import pytest
from django.core.files.storage import default_storage

from litejobs.models import ReportAudit, ReportRun
from litejobs.reports import ReportOutput
from tests.reports_helpers import RANGE, reader, sales
from tests.testapp import reports

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)


def test_a_small_result_is_answered_within_the_request(clock):
    sales("north", 4)
    user = reader("ann", "north")
    answer = reports.sales.request(user=user, params=RANGE)
    assert isinstance(answer, ReportOutput)
    lines = answer.content.decode().splitlines()
    assert lines[0] == "number,customer,amount,status,note,formula,placed"
    assert len(lines) == 5
    assert ReportAudit.objects.get().outcome == "served"


def test_a_large_result_runs_in_the_worker_and_is_downloaded(clock, run_worker, client):
    sales("north", 23)
    user = reader("ann", "north")
    run = reports.sales.request(user=user, params=RANGE)
    assert isinstance(run, ReportRun)
    run_worker(queues=["reports"])
    run.refresh_from_db()
    assert (run.state, run.row_count, run.parts) == ("done", 23, 6)
    client.force_login(user)
    response = client.get(run.download_url())
    body = b"".join(response.streaming_content).decode()
    assert response.status_code == 200
    assert len(body.splitlines()) == 24
    assert "north" in run.output_path
    assert default_storage.exists(f"{run.output_path}/manifest.json")
