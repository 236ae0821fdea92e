"""The worker's job lines as structured records: a real in-process run, written by
``litejobs.logging.JSONFormatter``, parsed back line by line."""

import io
import json
import logging
from datetime import datetime

import pytest

from litejobs.logging import JSONFormatter
from tests.testapp.jobs import flaky, record

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def json_lines():
    """The litejobs logger's INFO lines, as JSON objects, for the test's duration."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JSONFormatter())
    target = logging.getLogger("litejobs")
    level = target.level
    target.addHandler(handler)
    target.setLevel(logging.INFO)
    try:
        yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        target.removeHandler(handler)
        target.setLevel(level)


def test_each_attempt_writes_one_start_and_one_end_object_with_its_fields(
    clock, run_worker, json_lines
):
    done = record.enqueue(label="logged", value=3)
    failing = flaky.enqueue(label="logged", failures=1)
    run_worker(concurrency=1)
    lines = [line for line in json_lines() if line["message"].startswith("job ")]
    by_job = {
        job_id: [line for line in lines if line.get("job_id") == job_id]
        for job_id in (done.id, failing.id)
    }
    start, end = by_job[done.id]
    assert start["message"].startswith(f"job start id={done.id} ")
    assert start["level"] == "INFO"
    assert start["logger"] == "litejobs.worker.runner"
    assert datetime.fromisoformat(start["time"]).utcoffset() is not None
    assert start["job_name"] == record.name
    assert (start["attempt"], start["max_attempts"], start["queue"]) == (1, 3, "default")
    assert "outcome" not in start
    assert end["logger"] == "litejobs.worker.settling"
    assert (end["job_id"], end["attempt"], end["outcome"]) == (done.id, 1, "done")
    assert isinstance(end["duration_ms"], float) and end["duration_ms"] >= 0
    assert "error" not in end
    start, end = by_job[failing.id]
    assert start["job_name"] == flaky.name
    assert (end["outcome"], end["attempt"]) == ("failed", 1)
    assert end["error"] == "builtins.RuntimeError"
    # The text is today's: the plain formatter's line, the JSON's message.
    assert end["message"].startswith(f"job end id={failing.id} name={flaky.name} outcome=failed")
