"""The database restarted under a real worker: it recovers and fails no job because of it.

These tests run their own embedded PostgreSQL server (whatever DATABASE_URL says) so that
restarting it disturbs nothing else.
"""

import pytest

from tests.conftest import wait_for
from tests.processes.conftest import counts

pytestmark = pytest.mark.slow


def enqueue(processes, env, code):
    shell = processes.start("shell", "-v0", "-c", code, env=env, name="enqueue")
    assert shell.wait(60) == 0, processes.log(shell)


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
