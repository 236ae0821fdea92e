"""Mistakes a new user makes, each refused with a coded error that says what to change: an
unknown ``@job`` option, a key that is not a callable, a key callable that raises, Django Tasks
arguments that do not fit the task, a body that returns something JSON cannot hold."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from litejobs import Concurrency, job
from litejobs.exceptions import InvalidInput
from litejobs.jobs import catalog as registry
from litejobs.models import Job, JobAttempt, JobState
from tests.integration.test_enqueue import declared  # noqa: F401 - a fixture
from tests.testapp.tasks import add, which_attempt

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_unknown_job_option_is_refused_naming_the_option_it_likely_means():
    with pytest.raises(ImproperlyConfigured) as caught:

        @job(key=lambda n: f"n:{n}", retries=3)
        def misspelt(ctx, n: int) -> None: ...

    assert caught.value.code == "option-unknown"
    assert "misspelt" in str(caught.value)
    assert "unknown option 'retries'; did you mean 'retry'?" in str(caught.value)
    assert "JobDefinition" not in str(caught.value)
    with pytest.raises(ImproperlyConfigured) as caught:
        job(lambda ctx: None, key=lambda: "k", flavour="vanilla")
    assert "unknown option 'flavour'" in str(caught.value)
    assert "key, name, queue, retry" in str(caught.value)  # the options, when none is close


def test_a_key_that_is_no_callable_is_refused_saying_it_must_be_one(declared):  # noqa: F811
    def send_receipt(ctx, order_id: int) -> None: ...

    with pytest.raises(ImproperlyConfigured) as caught:
        declared(send_receipt, key="fixed")
    assert caught.value.code == "key-invalid"
    message = str(caught.value)
    assert "send_receipt" in message and "must be a callable" in message
    assert "has no idempotency key" not in message


@pytest.mark.parametrize("which", ["key", "tenant", "concurrency key"])
def test_a_key_callable_that_raises_is_named_with_its_job(clock, declared, which):  # noqa: F811
    def boom(order_id: str) -> str:
        raise ValueError(f"bad order {order_id}")

    options = {"key": lambda order_id: f"charge:{order_id}"}
    if which == "key":
        options["key"] = boom
    elif which == "tenant":
        options["tenant"] = boom
    else:
        options["concurrency"] = Concurrency(key=boom, limit=1)

    def charge(ctx, order_id: str, card_number: str) -> None: ...

    definition = declared(charge, sensitive=("card_number",), **options)
    arguments = {"order_id": "A-4111", "card_number": "4111-1111"}
    for enqueue in (
        lambda: definition.enqueue(**arguments),
        lambda: definition.enqueue_many([arguments]),
    ):
        with pytest.raises(InvalidInput) as caught:
            enqueue()
        message = str(caught.value)
        assert caught.value.code == "key-callable-failed"
        assert f"The {which} callable of job {definition.name!r} raised ValueError" in message
        assert "4111" not in message  # neither the arguments nor the error's text
        assert isinstance(caught.value.__cause__, ValueError)
    assert Job.objects.count() == 0


def test_a_task_enqueued_with_arguments_that_do_not_fit_it_is_refused():
    with pytest.raises(InvalidInput) as caught:
        add.enqueue(1)
    assert caught.value.code == "argument-invalid"
    assert "Task 'tests.testapp.tasks.add'" in str(caught.value)
    assert "missing a required argument: 'b'" in str(caught.value)
    assert "(a: int, b: int)" in str(caught.value)
    for call in (
        lambda: add.enqueue(1, 2, 3),
        lambda: add.enqueue(1, c=2),
        lambda: which_attempt.enqueue(),  # its context is not an argument the caller gives
    ):
        with pytest.raises(InvalidInput) as caught:
            call()
        assert caught.value.code == "argument-invalid"
    assert Job.objects.count() == 0
    assert add.enqueue(1, b=2).args == [1]  # what fits is accepted


def test_a_body_returning_a_set_fails_with_a_coded_error_naming_the_job(clock, run_worker):
    @job(key=lambda: "returns-a-set", retry=1)
    def returns_a_set(ctx) -> set[int]:
        return {1, 2}

    try:
        enqueued = returns_a_set.enqueue()
        assert run_worker() == {"dead": 1}
    finally:
        registry.unregister(returns_a_set.name)
    row = Job.objects.get(pk=enqueued.id)
    assert row.state == JobState.DEAD
    [attempt] = JobAttempt.objects.filter(job_id=enqueued.id)
    assert attempt.error_class == "litejobs.exceptions.ResultNotJson"
    assert attempt.error_message.startswith("[result-not-json] Job ")
    assert returns_a_set.name in attempt.error_message
    assert "plain JSON values" in attempt.error_message
