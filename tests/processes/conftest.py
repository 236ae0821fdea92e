"""Fixtures of the tests with real processes: a private embedded PostgreSQL server that a test
may restart under them, migrated for the test settings."""

import shutil
import tempfile
from pathlib import Path

import psycopg
import pytest

from tests.database import EmbeddedServer

#: Short leases, heartbeats and backoffs, so a restart is noticed and ridden out in seconds.
FAST = {"LEASE": "4s", "HEARTBEAT": "1s", "POLL_INTERVAL": "2s", "OUTAGE_BACKOFF_MAX": "1s"}


class PrivateServer(EmbeddedServer):
    """An embedded PostgreSQL server of one test, with an ``outage`` database."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(data_dir)
        self.url = self.database_url("outage")

    def query(self, sql, params=()):
        with psycopg.connect(self.url, autocommit=True) as conn:
            return conn.execute(sql, params).fetchall()


@pytest.fixture
def server():
    # A short path of its own (a unix socket path must stay short), removed afterwards.
    home = Path(tempfile.mkdtemp(prefix="ljoutage"))
    private = PrivateServer(home / "pgdata")
    yield private
    private.stop("immediate")
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
