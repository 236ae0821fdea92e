"""Rolling deploys: web processes and workers run different releases for a while.

A job whose name a worker does not know, or whose payload version is newer than its code, is
handed back uncounted for a worker that can run it (dead only after UNKNOWN_JOB_GRACE); older
payloads are upgraded before the body runs; every worker claims every kind of due job. Real
workers of two releases: ``tests/processes/test_rolling_deploys.py``.
"""

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test import override_settings

from litejobs import job
from litejobs.doctor import diagnose
from litejobs.exceptions import DeclarationError
from litejobs.jobs import catalog as registry
from litejobs.jobs import operations
from litejobs.models import Job, JobAttempt, JobState
from litejobs.scheduling import declarations
from litejobs.worker import Worker
from tests.factories import ReleasedJobFactory
from tests.testapp.jobs import record
from tests.testapp.models import Mark

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def declared():
    """Declare jobs for one test; forgotten afterwards."""
    names = []

    def declare(**options):
        def wrap(func):
            definition = job(**options)(func)
            names.append(definition.name)
            return definition

        return wrap

    yield declare
    for name in names:
        registry.unregister(name)


# Unknown names ---------------------------------------------------------------------------------


def test_a_job_no_declaration_here_knows_is_handed_back_uncounted_with_a_backoff(clock, run_worker):
    row = ReleasedJobFactory(name="release.added")
    first = clock.now()
    delays = []
    for _ in range(5):
        assert run_worker() == {"handed_back": 1}
        row.refresh_from_db()
        assert (row.state, row.attempts, row.handed_back_at) == (JobState.SCHEDULED, 0, first)
        delays.append((row.run_at - clock.now()).total_seconds())
        assert run_worker() == {}  # not due again yet: no loop of re-claims
        clock.set(row.run_at)
    assert delays == [1, 1, 2, 4, 8]  # doubling from the first hand-back, capped at a minute
    assert row.error_class == "litejobs.UnknownJob"
    assert "Waiting for a worker that can run it" in row.error_message
    assert "release.added" in row.error_message
    assert not JobAttempt.objects.exists()  # uncounted: no attempt was spent


def test_a_job_no_worker_can_run_is_dead_after_the_grace_with_the_reason(clock, run_worker):
    row = ReleasedJobFactory(name="release.added")
    with override_settings(LITEJOBS={"UNKNOWN_JOB_GRACE": "10s"}):
        assert run_worker() == {"handed_back": 1}
        clock.advance("9s")
        assert run_worker() == {"handed_back": 1}  # still within the grace
        clock.advance("2s")
        assert run_worker() == {"dead": 1}
    row.refresh_from_db()
    assert row.state == JobState.DEAD and row.attempts == 1
    assert row.error_class == "litejobs.exceptions.UnknownJob"
    assert "[unknown-job]" in row.error_message and "UNKNOWN_JOB_GRACE (10s)" in row.error_message
    assert JobAttempt.objects.get(job=row).outcome == "failed"


def test_a_handed_back_job_runs_once_a_worker_knows_it(clock, run_worker, declared):
    row = ReleasedJobFactory(name="release.added", payload={"label": "late"})
    assert run_worker() == {"handed_back": 1}
    diagnosis = diagnose(max_ready_age=timedelta(minutes=5))
    [problem] = [p for p in diagnosis.problems if p.code == "unknown-job"]
    assert problem.job_ids == (row.id,) and "release.added" in problem.message

    @declared(name="release.added", key=lambda label: f"added:{label}")
    def added(ctx, label):
        Mark.objects.create(label=label, value=ctx.attempt)

    clock.advance("1s")
    assert run_worker() == {"done": 1}
    row.refresh_from_db()
    assert (row.state, row.attempts) == (JobState.DONE, 1)
    assert list(Mark.objects.values_list("label", "value")) == [("late", 1)]
    diagnosis = diagnose(max_ready_age=timedelta(minutes=5))
    assert "unknown-job" not in [p.code for p in diagnosis.problems]


def test_an_operator_retry_gives_a_dead_unknown_job_a_fresh_grace(clock, run_worker):
    row = ReleasedJobFactory(name="release.added")
    with override_settings(LITEJOBS={"UNKNOWN_JOB_GRACE": "1s"}):
        run_worker()
        clock.advance("2s")
        assert run_worker() == {"dead": 1}
        operations.retry(row.id, by="ops")
        assert run_worker() == {"handed_back": 1}  # waits again instead of dying at once


class Rollback(Exception):
    pass


def test_a_worker_leaves_a_job_it_handed_back_to_the_others_until_the_grace_ends(clock):
    """Else the old release keeps winning the claim race against the new one as it falls due."""
    row = ReleasedJobFactory(
        name="release.added", key="limited", concurrency_key="added", concurrency_limit=1
    )
    plain = ReleasedJobFactory(name="release.added", key="plain")
    old = Worker(once=True, concurrency=1, install_signals=False)
    with override_settings(LITEJOBS={"UNKNOWN_JOB_GRACE": "10s"}):
        old.run()
        assert old.counts == {"handed_back": 2}
        clock.advance("1s")  # both are due again
        with pytest.raises(Rollback), transaction.atomic():
            newer = Worker(once=True, install_signals=False)
            assert {j.id for j in newer.claimer.claim_on(connection, 10)} == {row.id, plain.id}
            raise Rollback
        assert old.claimer.claim_on(connection, 10) == []
        clock.advance("8s")
        assert old.claimer.claim_on(connection, 10) == []
        clock.advance("1s")  # the grace since the first hand-back is spent: it takes them back
        assert {j.id for j in old.claimer.claim_on(connection, 10)} == {row.id, plain.id}


# Payload versions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"version": 0}, "a whole number from 1 to 32767"),
        ({"version": "2"}, "a whole number from 1 to 32767"),
        ({"version": True}, "a whole number from 1 to 32767"),
        ({"version": 2}, "upgrade={1: fn_1_to_2}"),
        ({"version": 3, "upgrade": {1: dict}}, "upgrade={1: fn_1_to_2, 2: fn_2_to_3}"),
        ({"version": 2, "upgrade": {1: "not callable"}}, "one function per older payload"),
        ({"version": 2, "upgrade": [dict]}, "one function per older payload"),
        ({"upgrade": {1: dict}}, "upgrade={nothing}"),
    ],
)
def test_a_bad_version_declaration_is_refused_naming_the_fix(options, says):
    with pytest.raises(DeclarationError) as error:
        job(name="t.badversion", key=lambda: "k", **options)(lambda ctx: None)
    assert error.value.code == "version-invalid"
    assert says in str(error.value)
    assert "t.badversion" not in [d.name for d in registry.all_jobs()]


@pytest.fixture
def shaped(declared):
    """Version 3 of a job: version 2 renamed ``name`` to ``label``, version 3 added ``loud``."""

    @declared(
        name="t.shaped",
        key=lambda label, loud: f"shaped:{label}",
        version=3,
        upgrade={
            1: lambda old: {"label": old["name"]},
            2: lambda old: {**old, "loud": False},
        },
    )
    def shaped(ctx, label: str, loud: bool) -> None:
        Mark.objects.create(label=label.upper() if loud else label, value=ctx.attempt)

    return shaped


def test_an_enqueue_stores_the_declarations_payload_version(clock, shaped):
    enqueued = shaped.enqueue(label="now", loud=True)
    assert Job.objects.get(pk=enqueued.id).version == 3
    assert Job.objects.get(pk=record.enqueue(label="plain").id).version == 1


def test_older_payloads_are_upgraded_before_the_body_runs(clock, run_worker, shaped):
    ReleasedJobFactory(name="t.shaped", payload={"name": "from-v1"}, version=1)
    ReleasedJobFactory(name="t.shaped", payload={"label": "from-v2"}, version=2)
    ReleasedJobFactory(name="t.shaped", payload={"label": "from-v3", "loud": True}, version=3)
    assert run_worker() == {"done": 3}
    assert sorted(Mark.objects.values_list("label", flat=True)) == [
        "FROM-V3",
        "from-v1",
        "from-v2",
    ]


def test_an_upgrade_that_breaks_fails_the_attempt_like_the_body_would(clock, run_worker, declared):
    @declared(name="t.broken", key=lambda label: label, version=2, upgrade={1: lambda old: None})
    def broken(ctx, label):
        raise AssertionError("the body must not run on a payload it cannot read")

    row = ReleasedJobFactory(name="t.broken", payload={"label": "x"}, version=1, max_attempts=3)
    assert run_worker() == {"failed": 1}
    row.refresh_from_db()
    assert row.error_class == "builtins.TypeError" and "upgrade[1]" in row.error_message


def test_a_payload_newer_than_the_code_is_handed_back_not_run(clock, run_worker, shaped):
    row = ReleasedJobFactory(
        name="t.shaped", payload={"label": "from-v4", "colour": "red"}, version=4
    )
    assert run_worker() == {"handed_back": 1}
    row.refresh_from_db()
    assert (row.state, row.attempts, row.error_class) == (
        JobState.SCHEDULED,
        0,
        "litejobs.PayloadTooNew",
    )
    assert "version 4 payload" in row.error_message and "declares version 3" in row.error_message
    assert not Mark.objects.exists()


# Every kind of due job ------------------------------------------------------------------------


def test_a_worker_claims_concurrency_limited_jobs_whatever_its_own_declarations(
    clock, run_worker, monkeypatch
):
    """A newer release limited a job this worker's code declares without a limit (or added a
    schedule with overlap="forbid"): its rows carry a concurrency key all the same."""
    plain = [d for d in registry.all_jobs() if d.concurrency is None]
    monkeypatch.setattr(registry, "all_jobs", lambda: plain)
    monkeypatch.setattr(declarations, "_schedules", {})
    ReleasedJobFactory(
        name=record.name,
        payload={"label": "limited"},
        concurrency_key="new:limit",
        concurrency_limit=1,
    )
    assert run_worker() == {"done": 1}
    assert Mark.objects.get().label == "limited"


# Real processes of two releases ----------------------------------------------------------------
