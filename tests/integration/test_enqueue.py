"""Enqueueing: transactions, keys, batches, and refusals of bad input."""

from datetime import datetime, timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from litejobs import job
from litejobs.exceptions import InvalidInput
from litejobs.models import Job, JobState
from tests.testapp.jobs import charge_card, noop, record

pytestmark = pytest.mark.django_db


def test_enqueue_inside_a_rolled_back_transaction_leaves_nothing(clock):
    with pytest.raises(RuntimeError), transaction.atomic():
        record.enqueue(label="lost")
        assert Job.objects.count() == 1
        raise RuntimeError("roll back")
    assert Job.objects.count() == 0


def test_enqueue_commits_with_the_callers_transaction(clock):
    with transaction.atomic():
        enqueued = record.enqueue(label="kept", value=3)
    row = Job.objects.get()
    assert (row.id, enqueued.deduped) == (enqueued.id, False)
    assert row.name == "testapp.record"
    assert row.payload == {"label": "kept", "value": 3}
    assert row.state == JobState.READY
    assert row.run_at == clock.now() and row.created_at == clock.now()
    assert row.key == "record:kept:3"


def test_a_key_dedupes_while_its_job_is_live_and_is_free_once_terminal(clock):
    first = record.enqueue(label="a")
    second = record.enqueue(label="a")
    assert second.id == first.id and second.deduped
    assert Job.objects.count() == 1
    Job.objects.filter(pk=first.id).update(state=JobState.DONE)
    third = record.enqueue(label="a")
    assert third.id != first.id and not third.deduped
    assert Job.objects.filter(state=JobState.READY).count() == 1


def test_enqueue_many_of_1000_is_one_statement_and_answers_in_order(clock):
    with CaptureQueriesContext(connection) as queries:
        answers = noop.enqueue_many([{"n": i} for i in range(1000)])
    assert len(queries.captured_queries) == 1
    assert [a.deduped for a in answers] == [False] * 1000
    rows = dict(Job.objects.values_list("id", "payload"))
    assert [rows[a.id]["n"] for a in answers] == list(range(1000))


def test_enqueue_many_dedupes_within_the_batch_and_against_live_jobs(clock):
    existing = noop.enqueue(n=1)
    answers = noop.enqueue_many([{"n": 0}, {"n": 1}, {"n": 0}, {"n": 2}])
    assert [a.deduped for a in answers] == [False, True, True, False]
    assert answers[1].id == existing.id
    assert answers[2].id == answers[0].id
    assert Job.objects.count() == 3


def test_enqueue_many_writes_one_statement_per_thousand(clock):
    """Inside the caller's transaction, past 1,000 inputs, the inserts run under a savepoint."""
    with CaptureQueriesContext(connection) as queries:
        noop.enqueue_many([{"n": i} for i in range(2500)])
    sent = [
        "INSERT" if "INSERT INTO litejobs_job" in query["sql"] else query["sql"].split()[0]
        for query in queries.captured_queries
    ]
    assert sent == ["SAVEPOINT", "INSERT", "INSERT", "INSERT", "RELEASE"]
    assert Job.objects.count() == 2500


def test_a_bad_input_past_the_first_thousand_writes_nothing_and_keeps_the_callers_transaction(
    clock,
):
    """Later chunks are validated while earlier ones are inserted: a bad one rolls back to the
    savepoint, and the caller's own writes and transaction carry on."""
    inputs: list[dict] = [{"n": i} for i in range(2500)]
    inputs[2100] = {"n": object()}
    with transaction.atomic():
        record.enqueue(label="the caller's own write")
        with pytest.raises(InvalidInput) as caught:
            noop.enqueue_many(inputs)
        assert caught.value.code == "payload-not-json"
        assert list(Job.objects.values_list("name", flat=True)) == [record.name]
    assert Job.objects.count() == 1


def test_delay_and_run_at_schedule_the_job(clock):
    delayed = record.enqueue(label="later", delay="10m")
    at = record.enqueue(label="at", run_at=clock.now() + timedelta(hours=2), priority=7)
    rows = {row.id: row for row in Job.objects.all()}
    assert rows[delayed.id].state == JobState.SCHEDULED
    assert rows[delayed.id].run_at == clock.now() + timedelta(minutes=10)
    assert rows[at.id].run_at == clock.now() + timedelta(hours=2)
    assert rows[at.id].priority == 7


def test_a_job_without_a_key_is_refused_at_declaration_naming_it():
    with pytest.raises(ImproperlyConfigured) as caught:

        @job(queue="x")
        def keyless(ctx, n):
            return n

    assert caught.value.code == "key-missing"
    assert "keyless" in str(caught.value)


@pytest.mark.parametrize(
    ("arguments", "code", "named"),
    [
        ({"label": ("a", "tuple")}, "payload-not-json", "label"),
        ({"label": datetime(2026, 1, 1)}, "payload-not-json", "label"),  # noqa: DTZ001
        ({"label": float("nan")}, "payload-not-json", "label"),
        ({"label": {1: "int key"}}, "payload-not-json", "label"),
        ({"label": "x" * 70000}, "payload-too-large", "MAX_PAYLOAD_BYTES"),
        ({"lable": "typo"}, "argument-invalid", "lable"),
    ],
)
def test_bad_payloads_are_refused_and_nothing_is_written(clock, arguments, code, named):
    with pytest.raises(InvalidInput) as caught:
        record.enqueue(**arguments)
    assert caught.value.code == code
    assert named in str(caught.value)
    assert Job.objects.count() == 0


def test_a_changed_payload_limit_applies_to_the_next_enqueue(clock, settings):
    record.enqueue(label="x" * 200)  # read with the default limit
    settings.LITEJOBS = {"MAX_PAYLOAD_BYTES": 100}
    with pytest.raises(InvalidInput) as caught:
        record.enqueue(label="y" * 200)
    assert caught.value.code == "payload-too-large"
    settings.LITEJOBS = {}
    record.enqueue(label="z" * 200)
    assert Job.objects.count() == 2


def test_a_batch_over_10000_is_refused_before_anything_is_written(clock):
    with pytest.raises(InvalidInput) as caught:
        noop.enqueue_many([{"n": i} for i in range(10_001)])
    assert caught.value.code == "batch-too-large"
    assert Job.objects.count() == 0


def test_one_bad_input_in_a_batch_writes_nothing(clock):
    with transaction.atomic():
        with pytest.raises(InvalidInput):
            noop.enqueue_many([{"n": 1}, {"n": 2}, {"n": object()}])
        assert Job.objects.count() == 0  # the caller's transaction carries on


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({"run_at": datetime(2026, 5, 1, 9, 0)}, "run-at-naive"),  # noqa: DTZ001
        ({"delay": "-5m"}, "delay-negative"),
        ({"delay": -3}, "delay-negative"),
        ({"delay": timedelta(seconds=-1)}, "delay-negative"),
        ({"delay": "soon"}, "delay-invalid"),
        ({"delay": "1m", "run_at": datetime(2026, 5, 1, tzinfo=None)}, "option-conflict"),  # noqa: DTZ001
        ({"priority": 101}, "priority-invalid"),
    ],
)
def test_bad_enqueue_options_are_refused(clock, options, code):
    with pytest.raises(InvalidInput) as caught:
        record.enqueue(label="x", **options)
    assert caught.value.code == code
    assert Job.objects.count() == 0


def test_errors_never_echo_a_sensitive_value(clock):
    with pytest.raises(InvalidInput) as caught:
        charge_card.enqueue(card_number=("4111", "1111"))
    assert "4111" not in str(caught.value)


@pytest.fixture
def declared():
    """Declare jobs for one test; they are forgotten afterwards."""
    from litejobs.jobs import catalog as registry

    made = []

    def declare(func=None, **options):
        definition = job(**options)(func)
        made.append(definition.name)
        return definition

    yield declare
    for name in made:
        registry.unregister(name)


def test_positional_arguments_are_refused_naming_the_call_to_write(clock, declared):
    def send_receipt(ctx, order_id: int, lang: str = "en") -> None: ...

    receipt = declared(send_receipt, key=lambda order_id: f"receipt:{order_id}")
    with pytest.raises(InvalidInput) as caught:
        receipt.enqueue(5)
    assert caught.value.code == "argument-positional"
    assert "send_receipt.enqueue(order_id=...)" in str(caught.value)
    with pytest.raises(InvalidInput) as caught:
        receipt.enqueue_many([5, 6])
    assert caught.value.code == "argument-invalid"
    assert "list of dicts" in str(caught.value) and "'order_id': ..." in str(caught.value)
    assert Job.objects.count() == 0


def test_key_tenant_and_concurrency_key_see_the_functions_defaults(clock, declared):
    from litejobs import Concurrency

    def send_receipt(ctx, order_id: int, lang: str = "en", shop: str = "main") -> None: ...

    receipt = declared(
        send_receipt,
        key=lambda order_id, lang: f"receipt:{order_id}:{lang}",
        tenant=lambda shop: shop,
        concurrency=Concurrency(key=lambda shop, lang: f"{shop}:{lang}", limit=2),
    )
    enqueued = receipt.enqueue(order_id=1)
    row = Job.objects.get(pk=enqueued.id)
    assert (row.key, row.tenant, row.concurrency_key) == ("receipt:1:en", "main", "main:en")
    # The stored payload holds the defaults: the body runs with the values the key was built of.
    assert row.payload == {"order_id": 1, "lang": "en", "shop": "main"}
    [again, other] = receipt.enqueue_many([{"order_id": 1}, {"order_id": 1, "lang": "de"}])
    assert again.deduped and again.id == enqueued.id
    assert Job.objects.get(pk=other.id).key == "receipt:1:de"


def test_a_non_json_default_is_refused_at_declaration(declared):
    def export(ctx, ids=()) -> None: ...

    with pytest.raises(ImproperlyConfigured) as caught:
        declared(export, key=lambda ids: "export")
    assert caught.value.code == "signature-invalid"
    assert "'ids'" in str(caught.value) and "None" in str(caught.value)


def test_a_key_naming_no_argument_of_the_job_is_refused_at_declaration(declared):
    def send_receipt(ctx, order_id: int) -> None: ...

    with pytest.raises(ImproperlyConfigured) as caught:
        declared(send_receipt, key=lambda order: f"receipt:{order}")
    assert caught.value.code == "key-invalid"
    assert "['order']" in str(caught.value) and "order_id" in str(caught.value)


@pytest.mark.parametrize(
    ("option", "code", "what"),
    [
        ({"key": lambda card, order_id: f"pay:{card}"}, "key-sensitive", "key"),
        ({"key": lambda **arguments: f"pay:{arguments}"}, "key-sensitive", "key"),
        ({"tenant": lambda card: card[:4]}, "tenant-sensitive", "tenant"),
        (
            {"concurrency": "card"},  # a Concurrency over the card, made below
            "concurrency-key-sensitive",
            "concurrency key",
        ),
    ],
)
def test_a_key_tenant_or_concurrency_key_built_from_a_sensitive_argument_is_refused(
    declared, option, code, what
):
    """Keys, tenants and concurrency keys are stored as they are and shown in the admin, its
    search and `litejobs show`: built from a sensitive argument, they would show it."""
    from litejobs import Concurrency

    def pay(ctx, order_id: int, card: str) -> None: ...

    options = {"key": lambda order_id: f"pay:{order_id}", **option}
    if option.get("concurrency") == "card":
        options["concurrency"] = Concurrency(key=lambda card: card, limit=1)
    with pytest.raises(ImproperlyConfigured) as caught:
        declared(pay, sensitive=("card",), **options)
    assert caught.value.code == code
    message = str(caught.value)
    assert "Job 'tests.integration.test_enqueue.pay'" in message
    assert f"its {what} callable" in message and "'card'" in message
    assert "not sensitive" in message and "order_id" in message
    # Built from the other arguments, the same job is fine.
    declared(pay, sensitive=("card",), key=lambda order_id: f"pay:{order_id}")


def test_a_key_needing_an_argument_a_kwargs_job_was_not_given_is_refused(clock, declared):
    def flexible(ctx, **fields) -> None: ...

    definition = declared(flexible, key=lambda order_id: f"flex:{order_id}")
    with pytest.raises(InvalidInput) as caught:
        definition.enqueue(other=1)
    assert caught.value.code == "argument-invalid" and "order_id" in str(caught.value)
    assert Job.objects.count() == 0
