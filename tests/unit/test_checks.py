"""System checks: stable ids, and a message that names the fix."""

import pytest
from django.core import checks
from django.db import connection
from django.test import override_settings

from litejobs.checks import check_database, check_settings
from litejobs.jobs import catalog as registry
from litejobs.jobs import queues as job_queues
from tests.bad_settings import BAD_VALUES


def ids(messages):
    return [m.id for m in messages]


def test_a_non_postgresql_database_is_an_error(monkeypatch):
    monkeypatch.setattr(connection, "vendor", "mysql")
    [error] = check_database()
    assert error.id == "litejobs.E001"
    assert "PostgreSQL" in error.msg and "mysql" in error.msg


def test_an_unknown_database_alias_is_an_error():
    with override_settings(LITEJOBS={"DATABASE": "reports"}):
        assert ids(check_database()) == ["litejobs.E001"]


def test_the_postgresql_database_passes():
    assert check_database() == []


def test_a_heartbeat_too_close_to_the_lease_is_an_error():
    with override_settings(LITEJOBS={"LEASE": "10s", "HEARTBEAT": "8s"}):
        assert ids(check_settings()) == ["litejobs.E004"]
    with override_settings(LITEJOBS={"LEASE": "often"}):
        assert ids(check_settings()) == ["litejobs.E004"]


def test_the_checks_run_under_manage_py_check():
    assert not [m for m in checks.run_checks(tags=["litejobs"]) if m.level >= checks.ERROR]


# Settings ------------------------------------------------------------------------------------


def test_an_unknown_key_is_an_error_naming_the_close_key_and_never_raises_on_access():
    from litejobs.checks import check_setting_names
    from litejobs.conf import settings

    with override_settings(LITEJOBS={"HEARTBEATS": "5s", "LEASE": "30s"}):
        assert settings.LEASE == "30s"  # reading settings never raises for a typo
        [error] = check_setting_names()
    assert error.id == "litejobs.E041"
    assert "[settings-unknown]" in error.msg and "'HEARTBEATS'" in error.msg
    assert "Did you mean 'HEARTBEAT'?" in error.msg
    with override_settings(LITEJOBS=["LEASE"]):
        [error] = check_setting_names()
    assert error.id == "litejobs.E041" and "must be a dict" in error.msg


@pytest.mark.parametrize(
    ("litejobs", "named"),
    [
        ({"CLAIM_BATCH": 0}, "CLAIM_BATCH"),
        ({"MAX_PAYLOAD_BYTES": "64k"}, "MAX_PAYLOAD_BYTES"),
        ({"DRAIN_TIMEOUT": "a while"}, "DRAIN_TIMEOUT"),
        ({"DEFAULT_RETRY": {"attempt": 5}}, "Did you mean 'attempts'?"),
        ({"RETENTION": {"don": "1d"}}, "Did you mean 'done'?"),
        ({"RETENTION": {"done": "soon"}}, "RETENTION"),
        ({"CLOCK": "litejobs.clock.NoSuchClock"}, "CLOCK"),
        ({"CLOCK": 42}, "CLOCK"),
        ({"PREPARED_STATEMENTS": "no"}, "PREPARED_STATEMENTS"),
        ({"DEPLOYMENT": ""}, "DEPLOYMENT"),
    ],
)
def test_an_invalid_setting_value_is_an_error_naming_it(litejobs, named):
    with override_settings(LITEJOBS=litejobs):
        [error] = check_settings()
    assert error.id == "litejobs.E004"
    assert "[settings-invalid]" in error.msg and named in error.msg


def test_an_invalid_default_retry_or_timeout_falls_back_at_declaration():
    from litejobs import job

    with override_settings(LITEJOBS={"DEFAULT_RETRY": {"attempt": 5}, "DEFAULT_TIMEOUT": "x"}):

        @job(key=lambda: "k")
        def declared_under_bad_settings(ctx) -> None: ...

    registry.unregister(declared_under_bad_settings.name)
    assert declared_under_bad_settings.max_attempts == 3  # E004 reports the setting itself


def test_pgtrigger_missing_from_installed_apps_is_an_error(monkeypatch):
    from django.apps import apps

    from litejobs.checks import check_pgtrigger_installed

    assert check_pgtrigger_installed() == []
    installed = apps.is_installed
    monkeypatch.setattr(apps, "is_installed", lambda name: name != "pgtrigger" and installed(name))
    [error] = check_pgtrigger_installed()
    assert error.id == "litejobs.E040"
    assert 'Add "pgtrigger" to INSTALLED_APPS' in error.hint


# Discovery -----------------------------------------------------------------------------------


def test_a_reimported_module_replaces_its_registrations():
    from litejobs import job

    def make():
        @job(key=lambda: "again")
        def declared_twice(ctx) -> None: ...

        return declared_twice

    first, second = make(), make()  # the same function, as a second import declares it
    assert first.func is not second.func
    assert registry.get(first.name) is second
    registry.unregister(first.name)


def test_a_job_declared_outside_startup_is_reported_with_its_module():
    from litejobs import job
    from litejobs.checks import check_job_discovery

    # The jobs of the installed apps' jobs.py (and of what startup imports) are discovered.
    startup = {
        "tests.testapp.jobs",
        "tests.outboxapp.jobs",
        "litejobs.webhooks.delivery",
        "litejobs.bulk.execution",
    }
    assert not {w.obj for w in check_job_discovery()} & startup

    @job(key=lambda: "late")
    def declared_late(ctx) -> None: ...

    try:
        [warning] = [w for w in check_job_discovery() if declared_late.name in w.msg]
    finally:
        registry.unregister(declared_late.name)
    assert warning.id == "litejobs.W042"
    assert "[job-undiscovered]" in warning.msg and __name__ in warning.msg
    assert "unknown-job" in warning.msg and "jobs.py" in warning.hint

    # One in a module of an installed app is found by the worker (its rows name the module).
    def in_an_app(ctx) -> None: ...

    in_an_app.__module__ = "tests.testapp.services"
    inside = job(key=lambda: "inside")(in_an_app)
    try:
        assert not [w for w in check_job_discovery() if inside.name in w.msg]
    finally:
        registry.unregister(inside.name)


# Queues --------------------------------------------------------------------------------------


def test_a_queue_one_declaration_uses_beside_a_close_one_is_a_warning():
    from litejobs import job
    from litejobs.checks import check_queue_names

    assert not [w for w in check_queue_names() if w.obj == "emials"]

    @job(queue="emials", key=lambda: "typo")
    def misqueued(ctx) -> None: ...

    try:
        [warning] = [w for w in check_queue_names() if w.obj == "emials"]
    finally:
        registry.unregister(misqueued.name)
    assert warning.id == "litejobs.W041"
    assert "'emials'" in warning.msg and "Did you mean 'emails'?" in warning.msg


def test_the_declared_queues_include_webhooks_and_django_tasks_backends():
    with override_settings(
        TASKS={"default": {"BACKEND": "litejobs.tasks.LitejobsBackend", "QUEUES": ["ledgers"]}},
        LITEJOBS={"WEBHOOK_QUEUE": "hooks"},
    ):
        queues = job_queues.declared_queues()
        assert job_queues.unused_queue("ledger", "--queues") is not None
    assert queues["ledgers"] == ["TASKS['default']"]
    assert "LITEJOBS['WEBHOOK_QUEUE']" in queues["hooks"]
    assert job_queues.unused_queue("emails", "--queues") is None


# Every message carries its code ----------------------------------------------------------------


def test_the_database_metrics_and_outbox_checks_carry_their_code(monkeypatch):
    from litejobs.checks import check_metrics_token, check_outbox_settings

    with override_settings(LITEJOBS={"DATABASE": "reports"}):
        [unknown] = check_database()
    assert unknown.msg.startswith("[settings-invalid] LITEJOBS['DATABASE'] names 'reports'")
    with override_settings(LITEJOBS={"METRICS_TOKEN": "short"}):
        [token] = check_metrics_token()
    assert token.msg.startswith("[settings-invalid] LITEJOBS['METRICS_TOKEN']")
    assert "short" not in token.msg  # a token is never shown
    with override_settings(LITEJOBS={"RELAY_LEASE": "soon"}):
        [outbox] = check_outbox_settings()
    assert outbox.msg.startswith("[settings-invalid] LITEJOBS['RELAY_LEASE']")
    monkeypatch.setattr(connection, "vendor", "sqlite")
    [vendor] = check_database()
    assert vendor.msg.startswith("[postgresql-required] litejobs needs PostgreSQL")


def test_each_invalid_webhook_setting_is_its_own_error_with_its_own_hint():
    from litejobs.checks import check_outbox_settings

    bad = {"WEBHOOK_QUEUE": "bad queue!", "WEBHOOK_RETRY": {"attempts": 0}, "WEBHOOK_TIMEOUT": 0}
    with override_settings(LITEJOBS=bad):
        found = check_outbox_settings()
    by_key = {key: [e for e in found if f"LITEJOBS[{key!r}]" in e.msg] for key in bad}
    assert all(len(errors) == 1 for errors in by_key.values()), found
    [queue] = by_key["WEBHOOK_QUEUE"]
    assert "'bad queue!'" in queue.msg
    assert "duration" not in queue.hint and "'15s'" not in queue.hint  # a queue is a name
    [retry] = by_key["WEBHOOK_RETRY"]
    assert "Retry.attempts" in retry.msg and "'attempts': 10" in retry.hint
    [timeout] = by_key["WEBHOOK_TIMEOUT"]
    assert "'10s'" in timeout.hint


@pytest.mark.parametrize("value", [10**20, float("nan"), "99999999999d", float("inf")])
def test_a_duration_no_timedelta_holds_is_a_coded_refusal(value):
    with override_settings(LITEJOBS={"LEASE": value}):
        [error] = check_settings()
    assert "[settings-invalid] LITEJOBS['LEASE'] must be a finite duration" in error.msg


@pytest.mark.parametrize("retry", [{"give_up_on": 5}, {"attempts": True}])
def test_a_retry_policy_setting_of_the_wrong_shape_is_a_coded_refusal(retry):
    with override_settings(LITEJOBS={"DEFAULT_RETRY": retry}):
        [error] = check_settings()
    assert "[settings-invalid] LITEJOBS['DEFAULT_RETRY']: Retry." in error.msg


def test_an_invalid_payload_limit_falls_back_for_declarations_and_enqueues():
    from litejobs import job
    from litejobs.conf import settings

    for value in (-1, "big", 0, True):
        with override_settings(LITEJOBS={"MAX_PAYLOAD_BYTES": value}):
            assert settings.count("MAX_PAYLOAD_BYTES") == 65536

            @job(key=lambda: "k")
            def with_a_default(ctx, note: str = "x") -> None: ...

            registry.unregister(with_a_default.name)
            assert with_a_default.prepare({}).payload == '{"note":"x"}'


@pytest.mark.parametrize(
    ("key", "value"),
    [
        pytest.param(key, value, id=f"{key}-{kind}")
        for kind, values in BAD_VALUES.items()
        for key, value in values.items()
    ],
)
def test_each_invalid_setting_alone_is_a_coded_error_naming_it_and_declarations_fall_back(
    key, value
):
    from litejobs import job

    with override_settings(LITEJOBS={key: value}):
        errors = [m for m in checks.run_checks(tags=["litejobs"]) if m.is_serious()]

        @job(key=lambda: "k")
        def under_a_bad_setting(ctx, note: str = "x") -> None: ...

        registry.unregister(under_a_bad_setting.name)
        assert under_a_bad_setting.prepare({}).payload == '{"note":"x"}'
    assert errors
    for error in errors:
        assert error.msg.startswith("[settings-invalid] ") and f"LITEJOBS[{key!r}]" in error.msg
        assert error.hint
