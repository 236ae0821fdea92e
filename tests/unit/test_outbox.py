"""The outbox, the parts without a database: subscriber and topic declarations, the relay's
place in a worker, RetryAfter, and the outbox settings' checks."""

from __future__ import annotations

from datetime import timedelta

import pytest

from litejobs import outbox
from litejobs.exceptions import DeclarationError, InvalidInput
from litejobs.outbox import subscriber, topic
from litejobs.worker import Worker


def test_subscriber_declarations_are_checked():
    with pytest.raises(DeclarationError) as keyed:
        subscriber("test.x", key=lambda: "k")(lambda ctx, message: None)
    assert keyed.value.code == "subscriber-invalid"
    with pytest.raises(DeclarationError) as shaped:
        subscriber("test.x")(lambda ctx: None)
    assert shaped.value.code == "subscriber-invalid"
    with pytest.raises(DeclarationError) as named:
        subscriber("Not A Topic")(lambda ctx, message: None)
    assert named.value.code == "outbox-topic-invalid"
    with pytest.raises(DeclarationError) as declared:
        topic("bad topic")
    assert declared.value.code == "outbox-topic-invalid"
    assert not outbox.is_declared("test.x")


def test_the_relay_can_be_turned_off_per_worker_and_never_runs_with_once(settings):
    assert not Worker(install_signals=False, relay=False).relay
    assert not Worker(install_signals=False, once=True).relay
    settings.LITEJOBS = {"RELAY_IN_WORKER": False}
    assert not Worker(install_signals=False).relay


def test_retry_after_refuses_a_negative_delay():
    from litejobs import RetryAfter

    with pytest.raises(InvalidInput):
        RetryAfter(-1)
    assert RetryAfter("2m").delay == timedelta(minutes=2)


def test_outbox_settings_that_cannot_work_are_reported_by_check(settings):
    from litejobs.checks import check_outbox_settings

    assert check_outbox_settings() == []
    settings.LITEJOBS = {
        "OUTBOX_BATCH": 0,
        "WEBHOOK_MAX_FAILURES": -1,
        "WEBHOOK_ALLOWED_HOSTS": "127.0.0.1",
        "RELAY_LEASE": "soon",
        "RELAY_IN_WORKER": "yes",
    }
    found = check_outbox_settings()
    assert {error.id for error in found} == {"litejobs.E020"}
    text = " ".join(error.msg for error in found)
    for name in (
        "OUTBOX_BATCH",
        "WEBHOOK_MAX_FAILURES",
        "WEBHOOK_ALLOWED_HOSTS",
        "RELAY_LEASE",
        "RELAY_IN_WORKER",
    ):
        assert name in text
