"""Starting litejobs' runtimes as a new user does: real ``manage.py`` processes.

The documented commands run litejobs' runtimes whatever the order of ``INSTALLED_APPS``, run
every check (the database's included) before they start, and say on the terminal what they
serve.
"""

import signal
import socket
import subprocess
import sys
import time

import pytest

from tests import database
from tests.conftest import ROOT, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

APP_ORDERS = ["tests.variants.channels_first", "tests.variants.channels_last"]


def manage(processes, *args, settings="tests.settings", **env) -> subprocess.CompletedProcess:
    """Run ``manage.py ARGS`` to its end (at most a minute)."""
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env={**processes.env(), "DJANGO_SETTINGS_MODULE": settings, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("order", APP_ORDERS)
def test_the_runtimes_are_litejobs_whatever_the_order_of_installed_apps(processes, order):
    worker = manage(processes, "runworker", "--once", settings=order)
    assert worker.returncode == 0, worker.stderr
    assert "worker start" in worker.stderr
    assert "required: channels" not in worker.stderr

    relay = manage(processes, "runrelay", "--once", settings=order)
    assert relay.returncode == 0, relay.stderr

    scheduler = processes.start(
        "runscheduler", env={**processes.env(), "DJANGO_SETTINGS_MODULE": order}, name="sched"
    )
    wait_for(lambda: "scheduler start" in processes.log(scheduler), what="the scheduler")
    scheduler.send_signal(signal.SIGTERM)
    assert scheduler.wait(30) == 0, processes.log(scheduler)
    assert "shadowapp's command ran" not in processes.log(scheduler)


@pytest.mark.parametrize("order", APP_ORDERS)
def test_check_names_the_other_apps_shadowed_commands(processes, order):
    check = manage(processes, "check", settings=order)
    assert check.returncode == 0, check.stderr
    warned = [line for line in check.stderr.splitlines() if "(litejobs.W040)" in line]
    assert len(warned) == 4  # channels' runworker and tests.shadowapp's three
    assert any("The `runworker` command of channels is shadowed" in line for line in warned)
    assert "call_command(import_module('channels.management.commands.runworker')" in check.stderr


def assert_refused(result: subprocess.CompletedProcess, *expected: str) -> None:
    """Exit status 1, the expected message parts, and no traceback."""
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    for part in expected:
        assert part in result.stderr, result.stderr
    assert "Traceback" not in result.stderr + result.stdout


RUNTIMES = [("runworker", "--once"), ("runscheduler",), ("runrelay", "--once")]


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (
            "tests.variants.no_pgtrigger",
            ["litejobs.E040", 'Add "pgtrigger" to INSTALLED_APPS'],
        ),
        (
            "tests.variants.litejobs_typo",
            ["litejobs.E041", "'HEARTBEATS'", "Did you mean 'HEARTBEAT'?"],
        ),
        ("tests.variants.sqlite", ["litejobs.E001", "litejobs needs PostgreSQL"]),
    ],
)
def test_a_misconfiguration_is_a_coded_message_for_check_and_every_runtime(
    processes, settings, expected
):
    assert_refused(manage(processes, "check", settings=settings), *expected)
    for runtime in RUNTIMES:
        assert_refused(manage(processes, *runtime, settings=settings), *expected)


@pytest.fixture
def unmigrated_database(django_db_blocker):
    """An empty database on the test server (what a project has before `migrate`)."""
    from django.db import connection

    name = f"{connection.settings_dict['NAME']}_unmigrated"
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
        cursor.execute(f'CREATE DATABASE "{name}"')
    yield database.url_from_settings({**connection.settings_dict, "NAME": name})
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_runtime_before_migrate_says_to_migrate(processes, unmigrated_database):
    for runtime in RUNTIMES:
        result = manage(processes, *runtime, DATABASE_URL=unmigrated_database)
        assert_refused(
            result, "litejobs.E043", "litejobs' tables are not migrated", "manage.py migrate"
        )
    assert manage(processes, "check", DATABASE_URL=unmigrated_database).returncode == 0


def test_without_logging_configured_the_runtimes_say_what_they_serve(processes):
    quiet = "tests.variants.no_logging"
    worker = manage(processes, "runworker", "--once", "--queues", "emails,emial", settings=quiet)
    assert worker.returncode == 0, worker.stderr
    [start] = [line for line in worker.stderr.splitlines() if "worker start" in line]
    assert "INFO litejobs.worker" in start
    assert "queues=emails,emial" in start and "concurrency=4" in start
    assert "database='default' (postgresql " in start
    assert "[queue-unused] --queues names queue 'emial'" in worker.stderr
    assert "Did you mean 'emails'?" in worker.stderr

    relay = manage(processes, "runrelay", "--once", settings=quiet)
    assert "relay start" in relay.stderr and "database='default'" in relay.stderr

    scheduler = processes.start(
        "runscheduler", env={**processes.env(), "DJANGO_SETTINGS_MODULE": quiet}, name="sched"
    )
    wait_for(lambda: "scheduler start" in processes.log(scheduler), what="the start line")
    scheduler.send_signal(signal.SIGTERM)
    assert scheduler.wait(30) == 0
    assert "database='default'" in processes.log(scheduler)


def free_port() -> int:
    """A local TCP port where nothing listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_runtime_waits_for_an_unreachable_database_then_exits_1(processes, runtime):
    from django.db import connection

    port = free_port()
    nowhere = database.url_from_settings(
        {**connection.settings_dict, "HOST": "127.0.0.1", "PORT": port, "OPTIONS": {}}
    )
    env = {**processes.env(STARTUP_DATABASE_WAIT="2s"), "DATABASE_URL": nowhere}
    process = processes.start(*runtime, env=env, name="nowhere")
    wait_for(lambda: "waits for the database" in processes.log(process), what="the wait")
    waiting = time.monotonic()
    assert process.wait(2 + 4) == 1  # within the wait and a few seconds, never forever
    assert time.monotonic() - waiting >= 1.5
    log = processes.log(process)
    [line] = [line for line in log.splitlines() if "waits for the database" in line]
    assert f"on 127.0.0.1:{port}" in line and "up to 2s" in line
    for part in (
        "litejobs.E042",
        "[database-unreachable]",
        f"on 127.0.0.1:{port}) did not accept connections within 2s",
        "(LITEJOBS['STARTUP_DATABASE_WAIT'])",
    ):
        assert part in log, log
    assert "Traceback" not in log


def test_a_runtime_refused_by_the_server_for_good_says_why_instead_of_waiting(processes):
    from django.db import connection

    missing = database.url_from_settings(
        {**connection.settings_dict, "NAME": "litejobs_no_such_database"}
    )
    result = manage(processes, "runworker", "--once", DATABASE_URL=missing)
    assert_refused(result, "litejobs.E042", "does not exist", "createdb")
