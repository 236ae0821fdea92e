"""Real ``runscheduler`` processes: two replicas over a per-second schedule with the leader
killed midway, a graceful SIGTERM, and a database restarted under a scheduler."""

import itertools
import os
import signal
import time

import pytest

from litejobs.models import Job, LeaderLease, Occurrence
from tests.conftest import wait_for
from tests.processes.conftest import counts
from tests.testapp.models import Mark

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FAST = {
    "LEASE": "3s",
    "HEARTBEAT": "1s",
    "POLL_INTERVAL": "2s",
    "SCHEDULER_LEASE": "3s",
    "SCHEDULER_TICK": "0.5s",
}
#: How long the per-second schedule runs under the two schedulers.
RUN_FOR = 62.0


def ticks():
    return Occurrence.objects.filter(schedule__name="tests.tick")


def leader_pid():
    lease = LeaderLease.objects.filter(name="scheduler").first()
    return lease.pid if lease else None


def test_two_schedulers_one_killed_midway_run_every_occurrence_exactly_once(processes):
    env = processes.env(**FAST)
    worker = processes.start("runworker", "--concurrency", "2", env=env, name="worker")
    schedulers = [processes.start("runscheduler", env=env, name=f"scheduler{i}") for i in (1, 2)]
    wait_for(lambda: ticks().filter(state="completed").exists(), timeout=60, what="a first tick")
    started = time.monotonic()

    wait_for(lambda: time.monotonic() - started > RUN_FOR / 2, timeout=RUN_FOR, interval=0.5)
    pid = leader_pid()
    [leader] = [p for p in schedulers if p.pid == pid]
    [survivor] = [p for p in schedulers if p is not leader]
    os.killpg(leader.pid, signal.SIGKILL)
    leader.wait(10)
    killed_at = Occurrence.objects.filter(schedule__name="tests.tick").order_by("-scheduled_for")[0]

    wait_for(lambda: leader_pid() == survivor.pid, timeout=30, what="the survivor to lead")
    wait_for(lambda: time.monotonic() - started > RUN_FOR, timeout=RUN_FOR, interval=0.5)
    survivor.send_signal(signal.SIGTERM)
    assert survivor.wait(30) == 0, processes.log(survivor)
    assert "scheduler stop" in processes.log(survivor)
    lease = LeaderLease.objects.get(name="scheduler")
    assert lease.pid == survivor.pid  # it handed the lease on when it stopped

    # The worker finishes what was planned; nothing is left behind.
    wait_for(
        lambda: not ticks().exclude(state="completed").exists(),
        timeout=60,
        what="every planned tick to complete",
    )
    assert worker.poll() is None, processes.log(worker)

    instants = list(ticks().order_by("scheduled_for").values_list("scheduled_for", flat=True))
    assert len(instants) >= RUN_FOR
    # None missing: one occurrence for every second from the first to the last.
    gaps = {(b - a).total_seconds() for a, b in itertools.pairwise(instants)}
    assert gaps == {1.0}, f"gaps between occurrences: {sorted(gaps)}"
    assert instants[-1] > killed_at.scheduled_for  # the survivor planned after the kill
    # Exactly once: one job per occurrence, one attempt, one effect.
    jobs_per_occurrence = (
        Job.objects.filter(occurrence__schedule__name="tests.tick")
        .values_list("occurrence_id", flat=True)
        .order_by("occurrence_id")
    )
    assert len(jobs_per_occurrence) == len(set(jobs_per_occurrence)) == len(instants)
    assert set(ticks().values_list("attempts", flat=True)) == {1}
    labels = list(Mark.objects.filter(label__startswith="tick:").values_list("label", flat=True))
    assert sorted(labels) == sorted(f"tick:{instant.isoformat()}" for instant in instants)
    log = processes.log(leader) + processes.log(survivor)
    assert "scheduler leads" in processes.log(survivor)
    assert "Traceback" not in log


def test_a_scheduler_rides_out_a_database_restart(server, outage_env, processes):
    env = {**outage_env, **{f"LITEJOBS_{k}": v for k, v in FAST.items()}}
    scheduler = processes.start("runscheduler", env=env, name="scheduler")

    def planned() -> int:
        query = (
            "SELECT count(*) FROM litejobs_occurrence o JOIN litejobs_schedule s "
            "ON s.id = o.schedule_id WHERE s.name = 'tests.tick'"
        )
        return server.query(query)[0][0]

    wait_for(lambda: planned() >= 3, timeout=60, what="ticks to be planned")
    server.restart()
    before = planned()
    wait_for(lambda: planned() >= before + 5, timeout=60, what="planning after the restart")
    assert scheduler.poll() is None, processes.log(scheduler)
    log = processes.log(scheduler)
    assert "database unavailable" in log and "database recovered" in log
    rows = server.query(
        "SELECT o.scheduled_for FROM litejobs_occurrence o JOIN litejobs_schedule s "
        "ON s.id = o.schedule_id WHERE s.name = 'tests.tick' ORDER BY o.scheduled_for"
    )
    instants = [row[0] for row in rows]
    # The instants of the outage were planned late (within the misfire grace), none lost.
    assert {(b - a).total_seconds() for a, b in itertools.pairwise(instants)} == {1.0}
    assert counts(server).get("scheduled", 0) + counts(server).get("ready", 0) == len(instants)
    scheduler.send_signal(signal.SIGTERM)
    assert scheduler.wait(30) == 0
