"""What a user reads: counts as ``done=15``, durations as ``90d`` or ``1h30m``, an id that is
out of range said to be so."""

import json
import logging

import pytest
from django.core.management import CommandError

from litejobs import RetryAfter
from litejobs.exceptions import SignatureInvalid
from litejobs.webhooks.signing import sign, verify_signature
from tests.integration.test_cli import litejobs
from tests.testapp.jobs import flaky, record, scheduled_mark

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_worker_stop_line_counts_each_outcome_by_name(clock, run_worker, caplog):
    caplog.set_level(logging.INFO, logger="litejobs")
    record.enqueue(label="a")
    record.enqueue(label="b")
    flaky.enqueue(label="c", failures=1)
    run_worker()
    [stop] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("worker stop")]
    assert stop.endswith(" ended=3 done=2 failed=1"), stop
    assert "RunOutcome" not in stop


def test_schedule_show_prints_durations_as_they_are_written(clock, declare, scheduler):
    declare(
        "t.daily", job=scheduled_mark, every="1h", timeout="90m", jitter="10s", args={"label": "d"}
    )
    scheduler("t.daily").step()
    text, _ = litejobs("schedule", "show", "t.daily")
    assert "timetable          every 1h (UTC)" in text
    assert "retention          30d" in text
    assert "timeout            1h30m" in text
    assert "jitter             10s" in text
    assert "e+06" not in text
    data = json.loads(litejobs("schedule", "show", "t.daily", "--json")[0])
    assert data["retention_seconds"] == 30 * 86400  # JSON keeps numbers of seconds


@pytest.mark.parametrize(
    ("verb", "what"), [(["show"], "job"), (["replay", "--reason", "x"], "occurrence")]
)
def test_an_id_too_large_is_said_to_be_out_of_range(verb, what):
    with pytest.raises(CommandError) as caught:
        litejobs(*verb, "99999999999999999999")
    assert f"{what} id 99999999999999999999 is out of range" in str(caught.value)
    assert "positive whole number" not in str(caught.value)
    with pytest.raises(CommandError, match=f"{what} id is a positive whole number, got '-3'"):
        litejobs(*verb, "-3")


def test_retry_after_and_an_expired_signature_say_their_durations_as_written():
    assert str(RetryAfter("90m")) == "retry after 1h30m"
    body = b"{}"
    header = sign("s" * 32, body, 1_000, delivery="1", event="t")
    with pytest.raises(SignatureInvalid) as caught:
        verify_signature("s" * 32, header, body, delivery="1", event="t", now=1_000 + 3_600)
    assert "made 1h away from now, over the 5m tolerance" in str(caught.value)
