"""Schedule declarations: every bad one is refused at import with a clear error, and
``manage.py check`` reports modules that hold one; manual jobs need a guard."""

from datetime import timedelta

import pytest
from django.core import checks
from django.test import override_settings

from litejobs import Retry, job, manual, schedule
from litejobs.exceptions import DeclarationError
from litejobs.jobs import catalog as registry
from litejobs.scheduling import declarations
from litejobs.scheduling import manual as manual_jobs
from tests.conftest import run_python
from tests.testapp.jobs import scheduled_mark

VALID = {
    "job": scheduled_mark,
    "cron": "0 2 * * *",
    "misfire": "run_once",
    "operating_owner": "ops@example.com",
    "record_owner": "finance@example.com",
}
LOCAL = {
    **VALID,
    "timezone": "Europe/Berlin",
    "local_time_reason": "readers expect 9:00 local",
    "dst_skipped": "shift",
    "dst_repeated": "first",
}


@pytest.fixture(autouse=True)
def forget():
    yield
    for name in ("t.decl", "t.local", "t.draft"):
        declarations.unregister(name)
    manual_jobs.unregister("t.manual")


def refused(**options) -> str:
    with pytest.raises(DeclarationError) as error:
        schedule("t.decl", **options)
    assert error.value.code == "schedule-invalid"
    assert declarations.get("t.decl") is None  # nothing half-registered
    return str(error.value)


def test_a_valid_declaration_records_every_field():
    definition = schedule("t.decl", **VALID, jitter="5m", retention="90d", args={"label": "x"})
    snapshot = definition.snapshot()
    assert snapshot["cron"] == "0 2 * * *" and snapshot["timezone"] == "UTC"
    assert snapshot["overlap"] == "forbid" and snapshot["misfire"] == "run_once"
    assert snapshot["status"] == "active" and snapshot["retry"]["attempts"] == 3
    assert snapshot["operating_owner"] == "ops@example.com"
    assert definition.timeout == scheduled_mark.timeout  # the job's
    assert definition.concurrency_key == "schedule:t.decl"


def test_a_schedule_with_only_its_required_fields_is_valid_under_default_settings():
    with override_settings(LITEJOBS={}):
        # No timeout anywhere: DEFAULT_TIMEOUT (5m) applies, longer than LEASE (60s).
        nightly = job(key=lambda: "nightly", name="t.nightly")(lambda ctx: None)
        try:
            definition = schedule("t.decl", **{**VALID, "job": nightly})
        finally:
            registry.unregister("t.nightly")
    assert definition.timeout == timedelta(minutes=5) > timedelta(seconds=60)


def test_a_timeout_longer_than_the_lease_needs_no_longer_lease():
    with override_settings(LITEJOBS={"LEASE": "10s", "HEARTBEAT": "2s"}):
        definition = schedule("t.decl", **VALID, timeout="30m")
    assert definition.run_definition.timeout == timedelta(minutes=30)


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"cron": "61 2 * * *"}, "invalid cron expression '61 2 * * *'"),
        ({"cron": "0 2 * *"}, "Use five fields"),
        ({"cron": "0 2 30 2 *"}, "never fires"),
        ({"cron": None}, "give exactly one of cron="),
        ({"every": "1h"}, "give exactly one of cron="),
        ({"timezone": "Mars/Olympus"}, "unknown time zone 'Mars/Olympus'"),
        ({"operating_owner": None}, "operating_owner= is required"),
        ({"record_owner": "  "}, "record_owner= is required"),
        ({"misfire": None}, "misfire= must say what happens to instants missed"),
        ({"misfire": "catch_up"}, "'skip'"),
        ({"overlap": "sometimes"}, "overlap= must be 'forbid'"),
        ({"max_catchup": 0}, "max_catchup= must be a whole number from 1"),
        ({"status": "paused"}, "status= must be 'draft', 'active' or 'retired'"),
        ({"status": "draft"}, "a draft schedule needs decider="),
        ({"jitter": "1d"}, "jitter= ('1d') must be shorter than the time between two firings"),
        ({"jitter": "1d"}, "between two firings (1d), or occurrences"),
        ({"retention": 0}, "retention= must be positive"),
        ({"args": {"nope": 1}}, "does not fit job 'testapp.scheduled_mark'"),
        ({"args": {"label": object()}}, "does not round-trip through JSON"),
        ({"job": print}, "job= must be a function declared with @job"),
        ({"retry": Retry(attempts=2), "timeout": "0s"}, "timeout= must be positive"),
        ({"local_time_reason": "why not"}, "apply to business-local schedules only"),
    ],
)
def test_a_bad_declaration_is_refused_naming_the_fix(options, says):
    assert says in refused(**{**VALID, **options})


@pytest.mark.parametrize(
    ("missing", "says"),
    [
        ("local_time_reason", "needs local_time_reason="),
        ("dst_skipped", "dst_skipped='shift'"),
        ("dst_repeated", "dst_repeated='first'"),
    ],
)
def test_a_local_schedule_needs_a_reason_and_its_dst_behaviour(missing, says):
    options = {**LOCAL}
    del options[missing]
    assert says in refused(**options)


def test_every_takes_no_zone_and_whole_seconds():
    assert "fixed intervals in UTC" in refused(**{**LOCAL, "cron": None, "every": "1h"})
    assert "whole number of seconds" in refused(**{**VALID, "cron": None, "every": "1.5s"})


def test_a_name_with_a_colon_is_refused():
    with pytest.raises(DeclarationError, match="no colon"):
        schedule("billing:nightly", **VALID)


def test_a_local_schedule_and_a_draft_are_valid_when_complete():
    local = schedule("t.local", **LOCAL)
    assert local.timetable.local and local.local_time_reason == "readers expect 9:00 local"
    draft = schedule(
        "t.draft", **VALID, status="draft", decider="cfo@example.com", decide_by="2026-06-30"
    )
    assert draft.decide_by.isoformat() == "2026-06-30"


def test_two_schedules_in_two_modules_may_not_share_a_name():
    first = schedule("t.decl", **VALID)
    clash = declarations.ScheduleDefinition(**{**_fields(first), "module": "elsewhere"})
    with pytest.raises(DeclarationError, match="two schedules have this name"):
        declarations.register(clash)


def _fields(definition):
    from dataclasses import fields

    return {f.name: getattr(definition, f.name) for f in fields(definition) if f.init}


# manage.py check ---------------------------------------------------------------------------


def test_the_installed_schedules_pass_the_checks():
    assert not [m for m in checks.run_checks(tags=["litejobs"]) if m.level >= checks.ERROR]
    names = {d.name for d in declarations.all_schedules()}
    assert {"litejobs.housekeeping", "tests.tick"} <= names


def test_a_scheduler_tick_too_close_to_its_lease_is_an_error():
    from litejobs.checks import check_settings

    with override_settings(LITEJOBS={"SCHEDULER_LEASE": "2s", "SCHEDULER_TICK": "1.5s"}):
        [error] = check_settings()
    assert error.id == "litejobs.E004" and "SCHEDULER_TICK" in error.msg


# Manual jobs -------------------------------------------------------------------------------


def test_a_manual_job_without_a_guard_is_refused():
    with pytest.raises(DeclarationError) as error:
        manual("t.manual", job=scheduled_mark, runs_where="*")
    assert error.value.code == "job-guard-missing" and "guard=lambda actor, now" in str(error.value)


def test_a_project_without_the_admin_still_retries_an_occurrence_only_by_replay():
    """The guard that refuses a plain retry of an occurrence's job is in force once Django is
    ready, whatever else the project installs (here: no admin, no CLI imported)."""
    script = (
        "import django\n"
        "from django.conf import settings\n"
        "settings.configure(\n"
        "    INSTALLED_APPS=['django.contrib.contenttypes', 'django.contrib.auth', 'pgtrigger',"
        " 'litejobs'],\n"
        "    DATABASES={'default': {'ENGINE': 'django.db.backends.postgresql', 'NAME': 'x'}},\n"
        ")\n"
        "django.setup()\n"
        "from litejobs.jobs import operations\n"
        "print(sorted(operations.retry_guards))\n"
    )
    done = run_python(script)
    assert "'occurrence'" in done.stdout, done.stderr
