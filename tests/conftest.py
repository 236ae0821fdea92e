"""Shared fixtures: an injected clock, in-process workers, and real worker processes; and the
split of the suite into its two sessions.

A process has one settings module, so the suite runs as two pytest sessions: the library's
tests on ``tests.settings`` (``pytest``), and the demo project's own tests (``tests/demo/``) on
``tests.demo.settings`` (``pytest --ds tests.demo.settings``); ``make pytest`` runs both. Each
session keeps to its own part of the paths it is given.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.db import connection

from litejobs.clock import FrozenClock, use_clock
from litejobs.locks.connections import close_idle
from litejobs.worker import Worker
from tests import database

ROOT = Path(__file__).resolve().parent.parent
#: The demo project's own tests, and the settings of the session that runs them.
DEMO_TESTS = ROOT / "tests" / "demo"
DEMO_SETTINGS = "tests.demo.settings"
_LEFT = pytest.StashKey[list[str]]()
_DESELECTED = pytest.StashKey[int]()


def run_python(script: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in a fresh Python process with no settings module (it configures what it
    needs, or nothing), from the repository's root; answers what it printed."""
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    return subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
    )


def demo_session() -> bool:
    """Whether this session runs the demo project's tests (on ``tests.demo.settings``)."""
    return os.environ.get("DJANGO_SETTINGS_MODULE") == DEMO_SETTINGS


def _in_demo(path: Path) -> bool:
    return path == DEMO_TESTS or DEMO_TESTS in path.parents


def pytest_configure(config):
    """Keep the session to its part: paths of the other part are left to the other session, and
    a folder holding both (``tests/``) runs this session's part of it."""
    demo = demo_session()
    kept, left = [], []
    for arg in config.args:
        path = (config.invocation_params.dir / arg.split("::")[0]).resolve()
        if _in_demo(path) == demo:
            kept.append(arg)
        elif demo and path in DEMO_TESTS.parents:
            kept.append(str(DEMO_TESTS))
        else:
            left.append(arg)
    config.args = kept
    config.stash[_LEFT] = left
    config.stash[_DESELECTED] = 0


def pytest_ignore_collect(collection_path, config):
    """The library's session leaves the demo's tests out (they need the demo's settings)."""
    if not demo_session() and collection_path == DEMO_TESTS:
        return True
    return None


def pytest_report_header(config):
    if demo_session():
        part = "the demo project's tests (tests/demo/), on tests.demo.settings"
    else:
        part = "the library's tests; tests/demo/ runs on its own: pytest --ds tests.demo.settings"
    left = config.stash[_LEFT]
    return [part, *([f"left to the other session: {' '.join(left)}"] if left else [])]


def pytest_deselected(items):
    config = items[0].config if items else None
    if config is not None:
        config.stash[_DESELECTED] += len(items)


def pytest_sessionfinish(session, exitstatus):
    """Stop the suite's embedded PostgreSQL if this session started it. A session given only
    the other part's paths, or whose selection (``-k``, ``-m``) left none of its tests, ran
    nothing of its part: that is no failure."""
    database.stop_if_started_here()
    config = session.config
    nothing_asked = config.stash[_LEFT] and not config.args
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and (
        nothing_asked or config.stash[_DESELECTED]
    ):
        session.exitstatus = pytest.ExitCode.OK


@pytest.fixture(autouse=True)
def _lock_connections_closed():
    """Close the idle connections the locks kept: none may outlive the test database."""
    yield
    close_idle()


@pytest.fixture
def clock():
    """A FrozenClock in force for every litejobs call, at a fixed instant."""
    frozen = FrozenClock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))
    with use_clock(frozen):
        yield frozen


@pytest.fixture
def run_worker():
    """Run an in-process worker until nothing is due (``--once``); answers its outcome counts."""

    def run(**options) -> dict[str, int]:
        options.setdefault("once", True)
        options.setdefault("concurrency", 2)
        options.setdefault("install_signals", False)
        worker = Worker(**options)
        worker.run()
        return worker.counts

    return run


class Processes:
    """Real ``manage.py`` processes started by a test; all killed at teardown."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[subprocess.Popen] = []

    def env(self, **litejobs_settings) -> dict[str, str]:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "DATABASE_URL": database.url_from_settings(connection.settings_dict),
            "PYTHONUNBUFFERED": "1",
            "LITEJOBS_LOG_LEVEL": "INFO",
        }
        env.update({f"LITEJOBS_{k}": str(v) for k, v in litejobs_settings.items()})
        return env

    def start(
        self, *args: str, env: dict | None = None, name: str = "proc", prefix: tuple = ()
    ) -> subprocess.Popen:
        log_path = self.tmp_path / f"{name}-{len(self.started)}.log"
        with log_path.open("w") as log:
            process = subprocess.Popen(
                [*prefix, sys.executable, str(ROOT / "manage.py"), *args],
                cwd=ROOT,
                env=env or self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        process.log_path = log_path
        self.started.append(process)
        return process

    def worker(self, *args: str, **litejobs_settings) -> subprocess.Popen:
        return self.start("runworker", *args, env=self.env(**litejobs_settings), name="worker")

    def skewed_worker(self, offset: str, *args: str, **litejobs_settings) -> subprocess.Popen:
        """A worker on a host whose clock is ``offset`` (e.g. ``"+120s"``) off, by libfaketime.

        Only the wall clock moves: libfaketime 0.9.10 breaks Python's sleeps when it fakes the
        monotonic clock too. Skips the test where Debian's ``faketime`` is not installed.
        """
        if shutil.which("faketime") is None:
            pytest.skip("needs Debian's faketime (apt-get install faketime)")
        env = {**self.env(**litejobs_settings), "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
        prefix = ("faketime", "-f", offset)
        return self.start("runworker", *args, env=env, name="skewed-worker", prefix=prefix)

    @staticmethod
    def log(process) -> str:
        return Path(process.log_path).read_text()

    def stop_all(self) -> None:
        for process in self.started:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)


@pytest.fixture
def processes(tmp_path):
    started = Processes(tmp_path)
    yield started
    started.stop_all()


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.05, what: str = "condition"):
    """Poll ``predicate`` until it is truthy (real processes only); fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@pytest.fixture
def declare():
    """Declare schedules for one test (forgotten afterwards); owners and misfire default."""
    from litejobs import schedule
    from litejobs.scheduling import declarations

    names: list[str] = []

    def make(name: str, **options):
        options = {
            "misfire": "run_once",
            "operating_owner": "ops@example.com",
            "record_owner": "finance@example.com",
            "retention": "30d",
            **options,
        }
        definition = schedule(name, **options)
        names.append(name)
        return definition

    yield make
    for name in names:
        declarations.unregister(name)


@pytest.fixture
def scheduler():
    """An in-process ``Scheduler`` planning only the named schedules; drive it with ``step()``."""
    from litejobs.scheduling.scheduler import Scheduler

    def make(*names: str) -> Scheduler:
        return Scheduler(only=list(names), install_signals=False)

    return make
