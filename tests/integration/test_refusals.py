"""Mistakes a new user makes, each refused with a coded error that says what to change: an
unknown ``@job`` option, a key that is not a callable, a key callable that raises, Django Tasks
arguments that do not fit the task, a body that returns something JSON cannot hold."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.db import connection, transaction

from litejobs import Concurrency, job
from litejobs.exceptions import InvalidInput, LitejobsError, MigrationsUnapplied
from litejobs.jobs import catalog as registry
from litejobs.models import Job, JobAttempt, JobState
from tests.factories import JobFactory
from tests.integration.test_enqueue import declared  # noqa: F401 - a fixture
from tests.testapp.jobs import record, stepped
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


# A table of bad inputs: each is refused with its code, and nothing is written ---------------


def _before_migrate():
    """An enqueue on a database without litejobs' tables (dropped in a savepoint, so the
    refusal's rollback brings them back)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DROP TABLE litejobs_job CASCADE")
        record.enqueue(label="x")


BAD_INPUTS = {
    "enqueue_many(None)": (lambda: record.enqueue_many(None), "argument-invalid"),
    "enqueue_many(one dict)": (lambda: record.enqueue_many({"label": "x"}), "argument-invalid"),
    "enqueue_many('abc')": (lambda: record.enqueue_many("abc"), "argument-invalid"),
    "a NUL in an argument": (lambda: record.enqueue(label="a\x00b"), "payload-nul"),
    "a NUL deep in an argument": (
        lambda: stepped.enqueue(label="x", fail_on=["ok", {"k\x00": 1}]),
        "payload-nul",
    ),
    "a NUL in a later input of enqueue_many": (
        lambda: record.enqueue_many([{"label": "ok"}, {"label": "\x00"}]),
        "payload-nul",
    ),
    "delay=10**12": (lambda: record.enqueue(label="x", delay=10**12), "delay-invalid"),
    "delay='5300w'": (
        lambda: record.enqueue_many([{"label": "x"}], delay="5300w"),
        "delay-invalid",
    ),
    "delay=timedelta.max": (
        lambda: record.enqueue(label="x", delay=timedelta.max),
        "delay-invalid",
    ),
    "delay=nan": (lambda: record.enqueue(label="x", delay=float("nan")), "delay-invalid"),
    "enqueue before migrate": (_before_migrate, "migrations-unapplied"),
}


@pytest.mark.parametrize("bad", list(BAD_INPUTS), ids=list(BAD_INPUTS))
def test_a_bad_input_is_refused_with_its_code_and_nothing_written(clock, bad):
    attempt, code = BAD_INPUTS[bad]
    with pytest.raises(LitejobsError) as refused:
        attempt()
    assert refused.value.code == code, refused.value
    assert "\x00" not in str(refused.value)
    assert not Job.objects.exists()


def test_a_nul_refusal_names_the_argument_and_migrate_is_named_before_migrating(clock):
    with pytest.raises(InvalidInput) as refused:
        record.enqueue(label="a\x00b")
    assert "Argument 'label' of job 'testapp.record' holds a NUL character" in str(refused.value)
    with pytest.raises(MigrationsUnapplied) as unmigrated:
        _before_migrate()
    assert "python manage.py migrate" in str(unmigrated.value)
    with pytest.raises(InvalidInput) as too_long:
        record.enqueue(label="x", delay=10**12)
    assert "at most 100 years" in str(too_long.value)
    # A literal backslash before "u0000" is no NUL: stored as given.
    record.enqueue(label="C:\\u0000")
    assert Job.objects.get().payload == {"label": "C:\\u0000", "value": 0}


@pytest.fixture
def database_down():
    """The litejobs database stops answering (its connection points at a closed port)."""
    from tests.processes.test_startup import free_port

    saved = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict.update(HOST="127.0.0.1", PORT=free_port())
    yield
    connection.close()
    connection.settings_dict.clear()
    connection.settings_dict.update(saved)


#: Bad usages, refused before anything runs (``usage-invalid`` on the command line, exit 2).
BAD_COMMANDS = {
    "list --queue ''": (("list", "--queue", ""), "[queue-invalid] '' is not a queue name"),
    "list --queue 'a b'": (("list", "--queue", "a b"), "[queue-invalid] 'a b' is not a queue"),
    "list --name ''": (("list", "--name", " "), "a job name is not empty"),
    "retry --queue ''": (("retry", "--queue", ""), "[queue-invalid] '' is not a queue name"),
}
DATABASE_DOWN = {
    "list with the database down": ("list",),
    "queues with the database down": ("queues",),
    "show with the database down": ("show", "1"),
}


def _refused(*args) -> tuple[int, dict]:
    out, err = StringIO(), StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("litejobs", *args, "--json", stdout=out, stderr=err)
    return exited.value.code, json.loads(out.getvalue())


@pytest.mark.parametrize("bad", list(BAD_COMMANDS), ids=list(BAD_COMMANDS))
def test_a_bad_command_line_is_refused_with_its_code(clock, bad):
    args, said = BAD_COMMANDS[bad]
    JobFactory()
    with pytest.raises(CommandError) as refused:
        call_command("litejobs", *args, stdout=StringIO(), stderr=StringIO())
    assert said in str(refused.value)
    assert Job.objects.get().state == JobState.READY


@pytest.mark.parametrize("verb", list(DATABASE_DOWN), ids=list(DATABASE_DOWN))
def test_a_verb_on_a_database_that_is_down_is_refused_as_doctor_words_it(database_down, verb):
    exit_code, answer = _refused(*DATABASE_DOWN[verb])
    assert (exit_code, answer["code"]) == (1, "database-unreachable")
    assert "did not accept connections" in answer["message"]
    assert "Start PostgreSQL" in answer["message"]
