"""Starting litejobs' runtimes as a new user does: real ``manage.py`` processes.

The documented commands run litejobs' runtimes whatever the order of ``INSTALLED_APPS``, run
every check (the database's included) before they start, and say on the terminal what they
serve.
"""

import signal
import subprocess
import sys

import pytest

from tests.conftest import ROOT, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

APP_ORDERS = ["tests.apporder.before", "tests.apporder.after"]


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
