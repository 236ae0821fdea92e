"""``manage.py`` as an operator types it: real processes, real ``argv``.

Django's common options work after a ``litejobs`` verb as before it, ``--json`` answers a
refusal with one JSON object on stdout, and litejobs.W040 is said where it matters only.
"""

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def manage(processes, *args, **env) -> subprocess.CompletedProcess:
    """Run ``manage.py ARGS`` to its end (at most a minute)."""
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env={**processes.env(), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_djangos_common_options_work_after_the_verb(processes, tmp_path):
    (tmp_path / "elsewhere_settings.py").write_text("from tests.settings import *  # noqa\n")
    result = manage(
        processes,
        "litejobs",
        "list",
        "--json",
        "--pythonpath",
        str(tmp_path),
        "--settings",
        "elsewhere_settings",
        "-v",
        "2",
        "--traceback",
        "--no-color",
        "--skip-checks",
        DJANGO_SETTINGS_MODULE="tests.no_such_settings",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []
    nested = manage(processes, "litejobs", "schedule", "list", "--json", "-v", "0")
    assert nested.returncode == 0, nested.stderr


@pytest.mark.parametrize(
    ("args", "mentions"),
    [
        (("show", "seven"), "argument id"),
        (("list", "--bogus"), "unrecognized arguments: --bogus"),
        (("pause", "emails"), "--reason"),
        (("frobnicate",), "invalid choice: 'frobnicate'"),
    ],
)
def test_with_json_bad_usage_is_a_json_object_and_exit_2(processes, args, mentions):
    result = manage(processes, "litejobs", *args, "--json")
    assert result.returncode == 2, (result.stdout, result.stderr)
    answer = json.loads(result.stdout)
    assert set(answer) == {"code", "message"}
    assert answer["code"] == "usage-invalid"
    assert mentions in answer["message"]
    without = manage(processes, "litejobs", *args)
    assert without.returncode == 2 and without.stdout == ""
    assert mentions in without.stderr


def test_with_json_a_refusal_is_a_json_object_and_exit_1(processes):
    result = manage(processes, "litejobs", "show", "424242", "--json")
    assert result.returncode == 1, result.stderr
    assert json.loads(result.stdout)["code"] == "job-not-found"
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("queues", ["", " , ", "bad queue!"])
def test_runworker_refuses_queues_that_name_no_valid_queue(processes, queues):
    result = manage(processes, "runworker", "--once", "--queues", queues)
    assert result.returncode == 2, result.stderr
    assert "--queues: [queue-invalid]" in result.stderr
    assert "worker start" not in result.stderr and "Traceback" not in result.stderr


SHADOWING = {"DJANGO_SETTINGS_MODULE": "tests.variants.channels_last"}


def shadow_warnings(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in result.stderr.splitlines() if "(litejobs.W040)" in line]


def test_w040_is_said_by_check_and_the_shadowed_runtime_only(processes):
    for args in (("migrate", "--check"), ("litejobs", "list")):
        result = manage(processes, *args, **SHADOWING)
        assert result.returncode == 0, result.stderr
        assert shadow_warnings(result) == [], args
    [relay] = shadow_warnings(manage(processes, "runrelay", "--once", **SHADOWING))
    assert "The `runrelay` command of tests.shadowapp" in relay
    worker = manage(processes, "runworker", "--once", **SHADOWING)
    assert worker.returncode == 0, worker.stderr
    warned = shadow_warnings(worker)
    assert len(warned) == 2  # channels' runworker and tests.shadowapp's
    assert all("The `runworker` command of" in line for line in warned)
    pool = manage(
        processes, "runworker", "--once", "--pool", "processes", "--concurrency", "2", **SHADOWING
    )
    assert pool.returncode == 0, pool.stderr
    assert len(shadow_warnings(pool)) == 2  # the parent's; its children say nothing new
    assert len(shadow_warnings(manage(processes, "check", **SHADOWING))) == 4
