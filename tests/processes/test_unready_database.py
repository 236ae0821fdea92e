"""A database litejobs cannot use yet, met by the operator's command line and by an enqueue:
a coded message that says what to do, never a driver's traceback."""

import json

import pytest

from tests import database
from tests.processes.test_startup import (  # unmigrated_database: a fixture
    assert_refused,
    free_port,
    manage,
    unmigrated_database,  # noqa: F401
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.mark.parametrize("verb", [("list",), ("show", "1"), ("purge",)])
def test_the_command_line_before_migrate_says_to_migrate(
    processes,
    unmigrated_database,  # noqa: F811
    verb,
):
    result = manage(processes, "litejobs", *verb, DATABASE_URL=unmigrated_database)
    assert_refused(
        result,
        "[migrations-unapplied]",
        "litejobs' tables are not migrated",
        "litejobs.0001_initial",
        "python manage.py migrate",
    )


def test_doctor_before_migrate_reports_the_unapplied_migrations(
    processes,
    unmigrated_database,  # noqa: F811
):
    """``doctor`` finds a problem (exit 3), reported alone: nothing else can be checked."""
    result = manage(processes, "litejobs", "doctor", "--json", DATABASE_URL=unmigrated_database)
    assert result.returncode == 3, (result.returncode, result.stdout, result.stderr)
    problems = json.loads(result.stdout)["problems"]
    assert [p["code"] for p in problems] == ["migrations-unapplied"]
    assert "litejobs.0001_initial" in problems[0]["message"]
    assert "python manage.py migrate" in problems[0]["message"]
    assert "Traceback" not in result.stderr


ENQUEUE = """
from litejobs.exceptions import LitejobsError
from tests.testapp.jobs import record
for enqueue in (lambda: record.enqueue(label="x"), lambda: record.enqueue_many([{"label": "y"}])):
    try:
        enqueue()
    except LitejobsError as error:
        print(type(error).__name__, error)
"""


def test_an_enqueue_on_a_database_that_is_not_postgresql_says_litejobs_needs_it(processes):
    result = manage(processes, "shell", "-c", ENQUEUE, settings="tests.variants.sqlite")
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    refusals = [line for line in result.stdout.splitlines() if "[postgresql-required]" in line]
    assert len(refusals) == 2, result.stdout
    for line in refusals:
        assert line.startswith("DatabaseUnsupported [postgresql-required] litejobs needs")
        assert "'default' is sqlite" in line and "LITEJOBS['DATABASE']" in line


def test_an_enqueue_before_migrate_says_to_migrate(processes, unmigrated_database):  # noqa: F811
    result = manage(processes, "shell", "-c", ENQUEUE, DATABASE_URL=unmigrated_database)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    refusals = [line for line in result.stdout.splitlines() if "[migrations-unapplied]" in line]
    assert len(refusals) == 2, result.stdout
    for line in refusals:
        assert line.startswith("MigrationsUnapplied [migrations-unapplied] litejobs' tables")
        assert "python manage.py migrate" in line


@pytest.mark.parametrize("verb", [("list",), ("queues",)])
def test_the_command_line_with_the_database_down_answers_as_doctor_does(processes, verb):
    from django.db import connection

    nowhere = database.url_from_settings(
        {**connection.settings_dict, "HOST": "127.0.0.1", "PORT": free_port(), "OPTIONS": {}}
    )
    result = manage(processes, "litejobs", *verb, DATABASE_URL=nowhere)
    assert_refused(result, "[database-unreachable]", "did not accept connections")
    answer = manage(processes, "litejobs", *verb, "--json", DATABASE_URL=nowhere)
    assert answer.returncode == 1 and "Traceback" not in answer.stderr, answer.stderr
    assert json.loads(answer.stdout)["code"] == "database-unreachable"
