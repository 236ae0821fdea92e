"""System checks: stable ids, and a message that names the fix."""

import pytest
from django.core import checks
from django.db import connection
from django.test import override_settings

from litejobs import registry
from litejobs.checks import check_database, check_declarations, check_settings


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


@pytest.mark.django_db
def test_a_jobs_module_with_a_keyless_job_is_reported_not_crashing_startup():
    with override_settings(INSTALLED_APPS=["litejobs", "tests.badapp"]):
        registry.autodiscover()
        [error] = check_declarations()
    registry.autodiscover()  # back to the real apps
    assert error.id == "litejobs.E002"
    assert "tests.badapp.jobs" in error.msg and "has_no_key" in error.msg
    assert "key=" in error.msg
    assert check_declarations() == []


def test_a_heartbeat_too_close_to_the_lease_is_an_error():
    with override_settings(LITEJOBS={"LEASE": "10s", "HEARTBEAT": "8s"}):
        assert ids(check_settings()) == ["litejobs.E004"]
    with override_settings(LITEJOBS={"LEASE": "often"}):
        assert ids(check_settings()) == ["litejobs.E004"]


def test_the_checks_run_under_manage_py_check():
    assert not [m for m in checks.run_checks(tags=["litejobs"]) if m.level >= checks.ERROR]
