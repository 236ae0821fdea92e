"""The transactional outbox: staging, the relay, ordering, leadership, refusals, retention."""

from __future__ import annotations

import json
import logging
import threading
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import psycopg
import pytest
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext

from litejobs import Concurrency, outbox
from litejobs.exceptions import DeclarationError, InvalidInput
from litejobs.models import Job, JobAttempt, JobState, LeaderLease, OutboxMessage
from litejobs.models.outbox import OUTBOX_CHANNEL
from litejobs.outbox import Message, stage, subscriber, topic
from litejobs.outbox import operations as outbox_operations
from litejobs.outbox.relay import OutboxRelay
from litejobs.runtime.listening import connect
from litejobs.worker import Worker
from tests.conftest import wait_for
from tests.factories import LeaderLeaseFactory
from tests.outboxapp.jobs import asks_to_wait, audit_paid, declines_card, record_paid
from tests.testapp.models import Mark

PAID = "test.order-paid"


def relay(**options) -> OutboxRelay:
    return OutboxRelay(install_signals=False, **options)


def jobs_of(definition):
    return Job.objects.filter(name=definition.name).order_by("id")


# Staging -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_staged_message_rolls_back_with_its_transaction(clock):
    with pytest.raises(RuntimeError), transaction.atomic():
        stage(PAID, {"order": 1})
        assert OutboxMessage.objects.count() == 1
        raise RuntimeError("the business change failed")
    assert OutboxMessage.objects.count() == 0
    assert relay().publish_pending() == 0
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_stage_joins_the_callers_transaction_and_answers_the_message_id(clock):
    with transaction.atomic():
        message_id = stage(PAID, {"order": 7, "total": "9.90"}, key="order:7", tenant="acme")
    row = OutboxMessage.objects.get()
    assert row.id == message_id
    assert (row.topic, row.key, row.tenant) == (PAID, "order:7", "acme")
    assert row.payload == {"order": 7, "total": "9.90"}
    assert row.created_at == clock.now()
    assert row.published_at is None and row.state == "pending"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("call", "code"),
    [
        (lambda: stage(PAID, {"amount": Decimal("1.10")}), "outbox-payload-not-json"),
        (lambda: stage(PAID, {"when": object()}), "outbox-payload-not-json"),
        (lambda: stage(PAID, {"pair": (1, 2)}), "outbox-payload-not-json"),
        (lambda: stage(PAID, {1: "non-string key"}), "outbox-payload-not-json"),
        (lambda: stage(PAID, {"nan": float("nan")}), "outbox-payload-not-json"),
        (lambda: stage(PAID, [1, 2]), "outbox-payload-invalid"),
        (lambda: stage(PAID, "text"), "outbox-payload-invalid"),
        (lambda: stage("", {"order": 1}), "outbox-topic-invalid"),
        (lambda: stage("Orders Paid", {"order": 1}), "outbox-topic-invalid"),
        (lambda: stage("orders..paid", {"order": 1}), "outbox-topic-invalid"),
        (lambda: stage(None, {"order": 1}), "outbox-topic-invalid"),
        (lambda: stage("test.never-declared", {"order": 1}), "outbox-topic-unknown"),
        (lambda: stage(PAID, {"order": 1}, key=""), "outbox-key-invalid"),
        (lambda: stage(PAID, {"order": 1}, key="k" * 201), "outbox-key-invalid"),
        (lambda: stage(PAID, {"order": 1}, key=42), "outbox-key-invalid"),
        (lambda: stage(PAID, {"order": 1}, tenant=""), "outbox-tenant-invalid"),
    ],
)
def test_bad_input_is_refused_with_a_stable_code_and_writes_nothing(clock, call, code):
    with pytest.raises(InvalidInput) as refused:
        call()
    assert refused.value.code == code
    assert str(refused.value).startswith(f"[{code}] ")
    assert OutboxMessage.objects.count() == 0


@pytest.mark.django_db
def test_a_refusal_names_the_field_and_the_fix_without_echoing_the_value(clock):
    with pytest.raises(InvalidInput) as refused:
        stage(PAID, {"order": 1, "card": Decimal("4111111111111111")})
    message = str(refused.value)
    assert "'card'" in message and "Decimal" in message
    assert "4111" not in message
    with pytest.raises(InvalidInput) as unknown:
        stage("test.order-payed", {"order": 1})
    assert "test.order-paid" in str(unknown.value)  # lists the declared topics
    assert "@subscriber" in str(unknown.value)


@pytest.mark.django_db
def test_an_oversized_payload_is_refused(clock, settings):
    settings.LITEJOBS = {"MAX_PAYLOAD_BYTES": 100}
    with pytest.raises(InvalidInput) as refused:
        stage(PAID, {"order": 1, "note": "x" * 200})
    assert refused.value.code == "outbox-payload-too-large"
    assert OutboxMessage.objects.count() == 0


# Publishing --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_relay_creates_one_job_per_subscriber_and_marks_the_message_published(clock):
    message_id = stage(PAID, {"order": 5}, key="order:5", tenant="acme")
    assert relay().publish_pending() == 1

    message = OutboxMessage.objects.get()
    assert message.published_at == clock.now()
    assert message.relay_fence == LeaderLease.objects.get(name="relay").fence
    for definition in (record_paid, audit_paid):
        [row] = jobs_of(definition)
        assert row.key == f"outbox:{message_id}"
        assert row.tenant == "acme"
        assert row.queue == definition.queue
        assert row.state == JobState.READY
        assert row.payload == {
            "message_id": message_id,
            "topic": PAID,
            "key": "order:5",
            "tenant": "acme",
            "created_at": clock.now().isoformat(),
            "payload": {"order": 5},
        }
    assert jobs_of(audit_paid).get().queue == "audit"


@pytest.mark.django_db
@pytest.mark.parametrize("microseconds", [0, 250_017])
def test_the_arguments_the_database_builds_are_those_a_message_envelope_holds(clock, microseconds):
    """Subscriber jobs get their arguments from SQL; they must read as the message's
    envelope built in Python would (quotes, backslashes, non-ASCII and the time's format)."""
    from litejobs.outbox.staging import StagedRow

    clock.set(clock.now().replace(microsecond=microseconds))
    message_id = stage(
        PAID,
        {"order": 7, "note": 'say "héllo" \\ ✓', "nested": {"list": [1, None, 2.5]}},
        key='order:"7" é',
        tenant="tenant\\ü",
    )
    staged = OutboxMessage.objects.get(pk=message_id)
    envelope = StagedRow(
        id=staged.id,
        topic=staged.topic,
        key=staged.key,
        tenant=staged.tenant,
        payload=json.dumps(staged.payload),
        created_at=staged.created_at,
    ).envelope()
    assert relay().publish_pending() == 1
    assert jobs_of(record_paid).get().payload == json.loads(envelope)


@pytest.mark.django_db
def test_a_batch_is_one_lead_one_claim_and_one_enqueue_per_subscriber(clock):
    for order in range(40):
        stage(PAID, {"order": order})
    stage("test.webhook-only", {"n": 1})  # no subscriber, no endpoint: just marked published
    with CaptureQueriesContext(connection) as queries:
        report = relay(batch_size=100).publish_batch()
    assert (report.messages, report.jobs, report.deliveries) == (41, 80, 0)
    statements = [q["sql"] for q in queries.captured_queries]
    # Savepoint bookkeeping aside: the lease, the claim-and-mark, two enqueues, the endpoints.
    work = [s for s in statements if "SAVEPOINT" not in s]
    assert len(work) == 5, work
    assert "litejobs_leaderlease" in work[0]
    assert "UPDATE litejobs_outboxmessage" in work[1]
    assert "INSERT INTO litejobs_job" in work[2] and "INSERT INTO litejobs_job" in work[3]
    assert "litejobs_webhookendpoint" in work[4]
    assert not OutboxMessage.objects.filter(published_at__isnull=True).exists()


@pytest.mark.django_db
def test_a_topic_nobody_listens_to_is_marked_published_without_jobs(clock):
    stage("test.webhook-only", {"n": 1})
    assert relay().publish_pending() == 1
    assert OutboxMessage.objects.get().published_at == clock.now()
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_publishing_again_publishes_nothing_twice(clock):
    for order in range(3):
        stage(PAID, {"order": order})
    first = relay()
    assert first.publish_pending() == 3
    assert first.publish_pending() == 0
    assert relay().publish_pending() == 0
    assert jobs_of(record_paid).count() == 3
    assert len(set(jobs_of(record_paid).values_list("key", flat=True))) == 3


@pytest.mark.django_db
def test_messages_of_one_key_are_published_in_the_order_they_were_staged(clock):
    staged = [stage(PAID, {"order": n}, key=f"order:{n % 3}") for n in range(30)]
    published = relay(batch_size=4).publish_pending()  # many small batches
    assert published == 30
    for key in ("order:0", "order:1", "order:2"):
        wanted = [m for m in staged if OutboxMessage.objects.get(pk=m).key == key]
        rows = jobs_of(record_paid).filter(payload__key=key)
        assert [row.payload["message_id"] for row in rows] == wanted  # job ids rise with them


@pytest.mark.django_db(transaction=True)
def test_a_second_transaction_staging_the_same_key_waits_for_the_first(clock):
    """The key lock: ids of one key are handed out in commit order."""
    other = connect(connection.alias)
    try:
        with transaction.atomic():
            first = stage(PAID, {"order": 1}, key="order:1")
            # Another session staging the same key blocks until this transaction ends.
            other.execute("SET lock_timeout = '200ms'")
            with pytest.raises(psycopg.errors.LockNotAvailable):
                other.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended('litejobs.outbox:' || %s, 0))",
                    ["order:1"],
                )
            other.rollback()
            # Another key is not held up.
            other.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended('litejobs.outbox:' || %s, 0))",
                ["order:2"],
            )
            other.rollback()
        second = stage(PAID, {"order": 1}, key="order:1")
        assert second > first
    finally:
        other.close()


@pytest.mark.django_db(transaction=True)
def test_subscribers_receive_the_message_when_the_jobs_run(clock, run_worker):
    message_id = stage(PAID, {"order": 11}, key="order:11")
    relay().publish_pending()
    counts = run_worker()
    assert counts == {"done": 2}
    assert list(Mark.objects.filter(label="paid:11").values_list("value", "note")) == [
        (message_id, "order:11")
    ]
    assert Mark.objects.filter(label="audit:11", value=message_id).count() == 1
    assert jobs_of(record_paid).get().result == message_id


@pytest.mark.django_db(transaction=True)
def test_a_topics_sensitive_fields_never_reach_its_subscribers_error_details(
    clock, run_worker, caplog
):
    card = "4111111111111111"
    stage("test.card-charged", {"order": 12, "card": card})
    relay().publish_pending()
    caplog.set_level(logging.INFO, logger="litejobs")
    assert run_worker() == {"dead": 1}
    job = jobs_of(declines_card).get()
    attempt = JobAttempt.objects.get(job=job)
    for text in (job.error_message, job.error_traceback, attempt.error_message, caplog.text):
        assert card not in text
    assert job.error_message == "card [redacted] declined for order 12"


@pytest.mark.parametrize(
    ("sensitive", "named"),
    [
        ("card", "got 'card'"),
        (7, "got 7"),
        ([""], "''"),
        (["card.number"], "'card.number'"),
        ([7], "7"),
    ],
)
def test_a_topics_sensitive_fields_must_be_field_names(sensitive, named):
    with pytest.raises(DeclarationError) as refused:
        topic("test.refused-fields", sensitive=sensitive)
    assert refused.value.code == "outbox-sensitive-invalid"
    assert named in str(refused.value) and "test.refused-fields" in str(refused.value)
    assert not outbox.is_declared("test.refused-fields")


def test_a_subscriber_names_message_fields_on_its_topic_not_in_its_own_sensitive():
    with pytest.raises(DeclarationError) as refused:

        @subscriber("test.card-charged", name="tests.misdeclared", sensitive=("card",))
        def misdeclared(ctx, message): ...

    assert refused.value.code == "sensitive-invalid"
    assert "topic('test.card-charged', sensitive=('card',))" in str(refused.value)


def test_declaring_a_topic_again_adds_its_sensitive_fields():
    try:
        topic("test.growing", description="first")
        topic("test.growing", sensitive=("iban",))
        again = topic("test.growing", sensitive=("card",))
    finally:
        outbox.unregister_topic("test.growing")
    assert (again.description, again.sensitive) == ("first", ("card", "iban"))


@pytest.mark.django_db
def test_a_subscriber_gets_a_message_object(clock):
    received = []
    try:

        @subscriber("test.inline", name="tests.inline_subscriber")
        def inline(ctx, message):
            received.append(message)

        message_id = stage("test.inline", {"a": [1, {"b": None}]}, key="k", tenant="t")
        relay().publish_pending()
        job = jobs_of(inline).get()
        inline.invoke(None, job.payload)
    finally:
        outbox.unregister_topic("test.inline")
    assert received == [
        Message(
            id=message_id,
            topic="test.inline",
            key="k",
            tenant="t",
            payload={"a": [1, {"b": None}]},
            created_at=clock.now(),
        )
    ]


@pytest.mark.django_db
def test_a_subscriber_passes_job_options_through_and_may_limit_concurrency_per_key(clock):
    try:

        @subscriber(
            "test.limited",
            name="tests.limited_subscriber",
            queue="ordered",
            priority=5,
            concurrency=Concurrency(key=lambda key: f"limited:{key}", limit=1),
        )
        def limited(ctx, message):
            pass

        stage("test.limited", {"n": 1}, key="acct:1")
        relay().publish_pending()
        job = jobs_of(limited).get()
    finally:
        outbox.unregister_topic("test.limited")
    assert (job.queue, job.priority) == ("ordered", 5)
    assert (job.concurrency_key, job.concurrency_limit) == ("limited:acct:1", 1)


# Leadership and refusals -------------------------------------------------------------------


@pytest.mark.django_db
def test_one_relay_publishes_at_a_time_and_a_new_leader_gets_a_higher_fence(clock):
    stage(PAID, {"order": 1})
    leader, follower = relay(), relay()
    assert leader.publish_pending() == 1
    first_fence = leader.fence

    stage(PAID, {"order": 2})
    assert follower.publish_batch() is None  # the lease is the leader's
    assert follower.publish_pending() == 0
    assert OutboxMessage.objects.filter(published_at__isnull=True).count() == 1

    clock.advance("16s")  # the leader stopped renewing: its lease lapsed
    assert follower.publish_pending() == 1
    assert follower.fence > first_fence
    assert OutboxMessage.objects.order_by("id").last().relay_fence == follower.fence
    assert leader.publish_batch() is None  # the old leader is refused now


@pytest.mark.django_db
def test_a_stopping_relay_hands_the_lease_on_at_once(clock):
    stage(PAID, {"order": 1})
    first = relay()
    first.publish_pending()
    first.resign()
    stage(PAID, {"order": 2})
    assert relay().publish_pending() == 1


@pytest.mark.django_db
def test_a_topic_this_process_does_not_declare_stops_the_relay_at_that_message(clock):
    first = stage(PAID, {"order": 1})
    with connection.cursor() as cursor:  # staged by a process running newer code
        cursor.execute(
            "INSERT INTO litejobs_outboxmessage (topic, key, tenant, payload, created_at) "
            "VALUES ('test.from-the-future', '', '', '{}', %s) RETURNING id",
            [clock.now()],
        )
        future = cursor.fetchone()[0]
    after = stage(PAID, {"order": 2})
    worker = relay()
    assert worker.publish_pending() == 1
    published = dict(OutboxMessage.objects.values_list("id", "published_at"))
    assert published[first] is not None
    assert published[future] is None and published[after] is None  # order kept
    assert worker.fence is None  # it stepped aside for a relay that knows the topic
    try:
        topic("test.from-the-future")
        clock.advance("1m")
        assert relay().publish_pending() == 2
    finally:
        outbox.unregister_topic("test.from-the-future")


@pytest.mark.django_db
def test_a_failing_batch_is_rolled_back_and_the_messages_before_the_culprit_go_out(clock):
    calls = []

    def key_of(payload):
        calls.append(payload["n"])
        if payload["n"] == 3:
            raise RuntimeError("a subscriber's concurrency key callable is broken")
        return "ok"

    try:

        @subscriber(
            "test.poison",
            name="tests.poison_subscriber",
            concurrency=Concurrency(key=key_of, limit=1),
        )
        def poisoned(ctx, message):
            pass

        ids = [stage("test.poison", {"n": n}) for n in range(5)]
        worker = relay()
        assert worker.publish_pending() == 0  # the whole batch rolled back
        assert not OutboxMessage.objects.filter(published_at__isnull=False).exists()
        assert not jobs_of(poisoned).exists()
        worker._retry_at = None
        assert worker.publish_pending() == 3  # one at a time, up to the culprit
        pending = OutboxMessage.objects.filter(published_at__isnull=True).order_by("id")
        assert list(pending.values_list("id", flat=True)) == ids[3:]
        assert jobs_of(poisoned).count() == 3
    finally:
        outbox.unregister_topic("test.poison")


@pytest.mark.django_db
def test_published_messages_cannot_be_changed(clock):
    stage(PAID, {"order": 1})
    pending = OutboxMessage.objects.get()
    with pytest.raises(DatabaseError, match="immutable"), transaction.atomic():
        OutboxMessage.objects.filter(pk=pending.pk).update(payload={"order": 2})
    relay().publish_pending()
    with pytest.raises(DatabaseError, match="immutable"), transaction.atomic():
        OutboxMessage.objects.filter(pk=pending.pk).update(published_at=None)
    assert OutboxMessage.objects.get().payload == {"order": 1}


# Wake-ups and the relay inside the worker --------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_committed_stage_notifies_listeners_and_a_rolled_back_one_never(clock):
    listener = connect(connection.alias)
    try:
        listener.execute(f"LISTEN {OUTBOX_CHANNEL}")
        with pytest.raises(RuntimeError), transaction.atomic():
            stage(PAID, {"order": 1})
            raise RuntimeError("roll back")
        assert list(listener.notifies(timeout=0.3)) == []
        with transaction.atomic():
            stage(PAID, {"order": 2})
            stage(PAID, {"order": 3})
        received = list(listener.notifies(timeout=2.0, stop_after=1))
        received += list(listener.notifies(timeout=0.2))
        assert len(received) == 1  # PostgreSQL folds a transaction's identical notifications
        assert {n.channel for n in received} == {OUTBOX_CHANNEL}
    finally:
        listener.close()


@pytest.mark.django_db(transaction=True)
def test_an_idle_relay_wakes_on_the_commit_not_on_its_poll(settings):
    settings.LITEJOBS = {"RELAY_POLL_INTERVAL": "1h"}
    running = relay()
    thread = threading.Thread(target=running.run)
    thread.start()
    try:
        wait_for(lambda: running.counts["batches"] == 0 and running._listener._conn, timeout=10)
        stage(PAID, {"order": 1})
        wait_for(
            lambda: OutboxMessage.objects.filter(published_at__isnull=False).exists(),
            timeout=5,
            what="the relay to publish on the NOTIFY",
        )
    finally:
        running.request_stop()
        thread.join(10)
    assert not thread.is_alive()
    assert jobs_of(record_paid).count() == 1
    assert not LeaderLease.objects.filter(
        expires_at__gt=OutboxMessage.objects.get().created_at + timedelta(hours=1)
    ).exists()


@pytest.mark.django_db(transaction=True)
def test_a_follower_takes_over_when_a_dead_leaders_lease_lapses_without_polling(settings):
    settings.LITEJOBS = {"RELAY_POLL_INTERVAL": "1h", "RELAY_LEASE": "15s"}
    now = datetime.now(UTC)
    # A leader that died two seconds before its lease lapses.
    LeaderLeaseFactory(
        owner="dead", host="gone", acquired_at=now, expires_at=now + timedelta(seconds=2)
    )
    follower = relay()
    thread = threading.Thread(target=follower.run)
    thread.start()
    try:
        wait_for(lambda: follower._listener._conn, timeout=10)
        stage(PAID, {"order": 1})  # wakes the follower: the lease still holds, it waits
        wait_for(lambda: follower._retry_at is not None, timeout=5, what="the follower to wait")
        assert not OutboxMessage.objects.filter(published_at__isnull=False).exists()
        wait_for(
            lambda: OutboxMessage.objects.filter(published_at__isnull=False).exists(),
            timeout=10,
            what="the takeover once the lease lapsed",
        )
    finally:
        follower.request_stop()
        thread.join(10)
    assert LeaderLease.objects.get(name="relay").fence > 1
    assert jobs_of(record_paid).count() == 1


@pytest.mark.django_db(transaction=True)
def test_runworker_runs_the_relay_and_the_subscribers(settings):
    settings.LITEJOBS = {"POLL_INTERVAL": "1s"}
    worker = Worker(concurrency=2, install_signals=False)
    assert worker.relay
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        stage(PAID, {"order": 21})
        wait_for(lambda: Mark.objects.filter(label="paid:21").exists(), timeout=15)
        wait_for(lambda: Mark.objects.filter(label="audit:21").exists(), timeout=15)
    finally:
        worker.request_stop()
        thread.join(30)
    assert not thread.is_alive()
    assert not worker._relay_thread.is_alive()
    assert LeaderLease.objects.get(
        name="relay"
    ).expires_at < OutboxMessage.objects.get().published_at + (
        timedelta(seconds=1)
    )  # handed on at stop


# Retention ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_purge_deletes_published_messages_past_the_retention_in_batches(clock, settings):
    settings.LITEJOBS = {"OUTBOX_RETENTION": "1d", "PURGE_BATCH": 2}
    for order in range(5):
        stage(PAID, {"order": order})
    relay().publish_pending()
    clock.advance("2d")
    stage(PAID, {"order": 99})  # pending: never purged
    relay().publish_pending()  # published now: within the retention
    stage(PAID, {"order": 100})
    assert outbox_operations.purge() == {"messages": 5, "deliveries": 0}
    assert OutboxMessage.objects.count() == 2
    assert OutboxMessage.objects.filter(published_at__isnull=True).count() == 1
    clock.advance("2d")
    assert outbox_operations.purge()["messages"] == 1  # the pending one stays
    assert OutboxMessage.objects.get().payload == {"order": 100}


@pytest.mark.django_db(transaction=True)
def test_the_built_in_housekeeping_schedule_purges_the_outbox(clock, run_worker):
    from litejobs.scheduling.housekeeping import housekeeping

    stage("test.webhook-only", {"n": 1})
    relay().publish_pending()
    clock.advance("8d")  # past the default 7d OUTBOX_RETENTION
    housekeeping.enqueue()
    assert run_worker() == {"done": 1}
    result = Job.objects.get(name=housekeeping.name).result
    assert result["outbox"] == {"messages": 1, "deliveries": 0}
    assert not OutboxMessage.objects.exists()


@pytest.mark.django_db
def test_backlog_reports_the_oldest_pending_message(clock):
    assert outbox_operations.backlog().pending == 0
    first = stage(PAID, {"order": 1})
    clock.advance("90s")
    stage(PAID, {"order": 2})
    found = outbox_operations.backlog()
    assert (found.pending, found.oldest_id, found.oldest_topic) == (2, first, PAID)
    assert found.oldest_age == timedelta(seconds=90)


# RetryAfter and the settings check ---------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_job_raising_retry_after_is_retried_then_not_after_the_policy(clock, run_worker):
    enqueued = asks_to_wait.enqueue(label="busy", seconds=90)
    assert run_worker() == {"failed": 1}
    job = Job.objects.get(pk=enqueued.id)
    assert job.state == JobState.FAILED
    assert job.run_at == clock.now() + timedelta(seconds=90)  # not the policy's 1h
    assert job.error_class == "litejobs.exceptions.RetryAfter"
    assert "try again in 90s" in job.error_message
    clock.advance("90s")
    assert run_worker() == {"dead": 1}  # the attempt counted: two of two spent
    assert Job.objects.get(pk=enqueued.id).attempts == 2
