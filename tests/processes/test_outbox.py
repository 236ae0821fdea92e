"""Real ``runrelay`` processes: a relay killed mid-batch, and a takeover that republishes."""

import os
import signal
from datetime import UTC, datetime

import pytest
from django.db import connection, transaction

from litejobs.models import Job, LeaderLease, OutboxMessage, WebhookDelivery
from litejobs.outbox import stage
from litejobs.runtime.listening import connect
from litejobs.webhooks import create_endpoint
from litejobs.webhooks.delivery import deliver
from tests.conftest import wait_for
from tests.outboxapp.jobs import audit_paid, record_paid

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FAST = {"RELAY_LEASE": "3s", "RELAY_POLL_INTERVAL": "1s", "OUTBOX_BATCH": 500}
MESSAGES = 1000
KEYS = 7


def published() -> int:
    return OutboxMessage.objects.filter(published_at__isnull=False).count()


def relay_waits_on_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND query LIKE '%%INSERT INTO litejobs_job%%'"
        )
        return cursor.fetchone()[0] > 0


def test_a_relay_killed_mid_batch_is_replaced_and_publishes_each_message_once_in_key_order(
    processes, settings
):
    settings.LITEJOBS = {"WEBHOOK_ALLOWED_HOSTS": ["127.0.0.1"]}
    endpoint = create_endpoint("http://127.0.0.1:9/hooks", ["test.order-paid"])
    with transaction.atomic():
        ids = [
            stage("test.order-paid", {"order": n}, key=f"customer:{n % KEYS}")
            for n in range(MESSAGES)
        ]
    # Freeze the relay inside its second batch: another session holds an uncommitted job with
    # the key the relay's audit_paid insert needs, so that INSERT waits — after the batch has
    # marked its messages published and inserted their record_paid jobs, before COMMIT.
    victim = ids[700]
    blocker = connect(connection.alias)
    blocker.autocommit = False
    try:
        blocker.execute(
            "INSERT INTO litejobs_job (name, key, run_at, created_at) "
            "VALUES (%s, %s, now(), now())",
            [audit_paid.name, f"outbox:{victim}"],
        )
        first = processes.start("runrelay", env=processes.env(**FAST), name="relay")
        wait_for(relay_waits_on_a_lock, timeout=60, what="the relay to block mid-batch")
        assert published() == 500  # the first batch committed; the second is in flight
        first_fence = LeaderLease.objects.get(name="relay").fence
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(10)
    finally:
        blocker.rollback()  # the killed relay's transaction rolls back as its backend notices
        blocker.close()

    assert published() == 500  # nothing of the killed batch survived
    second = processes.start("runrelay", env=processes.env(**FAST), name="relay")
    wait_for(lambda: published() == MESSAGES, timeout=60, what="the new leader to publish")

    lease = LeaderLease.objects.get(name="relay")
    assert lease.fence > first_fence
    fences = dict(OutboxMessage.objects.values_list("id", "relay_fence"))
    assert {fences[i] for i in ids[:500]} == {first_fence}
    assert {fences[i] for i in ids[500:]} == {lease.fence}

    # Each message once per subscriber and once per endpoint, nothing more.
    for definition in (record_paid, audit_paid, deliver):
        keys = list(Job.objects.filter(name=definition.name).values_list("key", flat=True))
        assert len(keys) == len(set(keys)) == MESSAGES, definition.name
    assert set(Job.objects.filter(name=record_paid.name).values_list("key", flat=True)) == {
        f"outbox:{i}" for i in ids
    }
    assert WebhookDelivery.objects.filter(endpoint=endpoint).count() == MESSAGES

    # Per key, jobs were created in the order the messages were staged.
    for definition in (record_paid, audit_paid):
        rows = Job.objects.filter(name=definition.name).order_by("id")
        by_key: dict[str, list[int]] = {}
        for payload in rows.values_list("payload", flat=True):
            by_key.setdefault(payload["key"], []).append(payload["message_id"])
        assert len(by_key) == KEYS
        for key, message_ids in by_key.items():
            assert message_ids == sorted(message_ids), (definition.name, key)

    second.send_signal(signal.SIGTERM)
    assert second.wait(20) == 0, processes.log(second)
    assert "relay stop" in processes.log(second)


def test_runrelay_once_publishes_what_is_pending_and_exits(processes):
    for n in range(3):
        stage("test.order-paid", {"order": n})
    relay = processes.start("runrelay", "--once", env=processes.env(**FAST), name="relay")
    assert relay.wait(60) == 0, processes.log(relay)
    assert published() == 3
    assert Job.objects.filter(name=record_paid.name).count() == 3
    # It handed the lease on as it exited: another relay may lead at once.
    assert LeaderLease.objects.get(name="relay").expires_at < datetime.now(UTC)


def test_a_relay_without_its_database_waits_for_it_and_stops_cleanly(processes):
    """Nothing listens where the database should be: the relay says it waits for it (up to
    STARTUP_DATABASE_WAIT), and still stops on SIGTERM meanwhile."""
    env = processes.env(**FAST, STARTUP_DATABASE_WAIT="60s")
    env["DATABASE_URL"] = "postgres://litejobs:litejobs@127.0.0.1:1/litejobs"
    relay = processes.start("runrelay", env=env, name="relay")
    wait_for(
        lambda: "waits for the database" in processes.log(relay), timeout=60, what="the wait log"
    )
    assert relay.poll() is None
    relay.send_signal(signal.SIGTERM)
    assert relay.wait(20) == 0, processes.log(relay)
