"""Every invalid ``LITEJOBS`` value, in real ``manage.py`` processes: Django starts, ``check``
names the setting with a coded error and the fix, other commands still start, and no runtime
starts with it. Nothing litejobs does while modules import or apps get ready raises on a setting:
it uses the default there."""

import subprocess

import pytest

from tests.bad_settings import BAD_VALUES
from tests.conftest import ROOT
from tests.processes.test_startup import manage as run

pytestmark = pytest.mark.slow


def manage(processes, litejobs: dict, *args: str) -> subprocess.CompletedProcess:
    """``manage.py ARGS`` on the test settings with ``LITEJOBS = litejobs``."""
    module = f"settings_{abs(hash(repr(litejobs)))}"
    (processes.tmp_path / f"{module}.py").write_text(
        f"from tests.settings import *  # noqa: F403\n\nLITEJOBS = {litejobs!r}\n"
    )
    return run(processes, *args, settings=module, PYTHONPATH=f"{processes.tmp_path}:{ROOT}")


def errors_naming(output: str, key: str) -> list[str]:
    """The coded check errors of ``output`` that name ``LITEJOBS[key]``."""
    return [
        line
        for line in output.splitlines()
        if "(litejobs.E" in line and "[settings-invalid]" in line and f"LITEJOBS[{key!r}]" in line
    ]


def assert_no_traceback(result: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in result.stdout + result.stderr, result.stderr


@pytest.mark.parametrize("kind", BAD_VALUES)
def test_check_names_every_invalid_setting_with_a_coded_error_and_nothing_raises(processes, kind):
    litejobs = BAD_VALUES[kind]
    check = manage(processes, litejobs, "check")
    assert_no_traceback(check)
    assert check.returncode == 1, check.stderr
    unnamed = [key for key in litejobs if not errors_naming(check.stderr, key)]
    assert not unnamed, check.stderr
    assert check.stderr.count("HINT:") >= len(litejobs)
    # litejobs' own declarations fell back to the defaults instead of failing.
    assert "litejobs.E003" not in check.stderr and "litejobs.E005" not in check.stderr

    other = manage(processes, litejobs, "shell", "-c", "print('started')")
    assert_no_traceback(other)
    assert other.stdout.splitlines()[-1:] == ["started"], other.stderr


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("LEASE", "sixty"),
        ("LEASE", [1]),
        ("LEASE", "-5s"),
        ("LEASE", 0),
        ("MAX_PAYLOAD_BYTES", -1),
        ("MAX_PAYLOAD_BYTES", "big"),
    ],
)
def test_one_invalid_setting_is_one_error_naming_it_and_its_value(processes, key, value):
    check = manage(processes, {key: value}, "check")
    assert_no_traceback(check)
    assert check.returncode == 1
    [error] = [line for line in check.stderr.splitlines() if "(litejobs." in line]
    assert errors_naming(error, key) == [error]
    assert repr(value) in error
    # Not litejobs' own housekeeping schedule, whose declaration used the default.
    assert "housekeeping" not in check.stderr


@pytest.mark.parametrize(
    "runtime", [("runworker", "--once"), ("runscheduler",), ("runrelay", "--once")]
)
def test_no_runtime_starts_with_an_invalid_setting(processes, runtime):
    result = manage(processes, {"LEASE": "sixty", "MAX_PAYLOAD_BYTES": -1}, *runtime)
    assert_no_traceback(result)
    assert result.returncode == 1
    assert errors_naming(result.stderr, "LEASE")
    assert errors_naming(result.stderr, "MAX_PAYLOAD_BYTES")
