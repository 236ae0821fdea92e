"""``manage.py litejobs bench``: every workload beside its floor, in a scratch database, with real
worker processes."""

import io
import json
from collections import defaultdict

import pytest
from django.core.management import call_command
from django.db import connection

from litejobs.models import Job
from tests.testapp.jobs import record

TINY = ["--rounds", "1", "--jobs", "W1=50,W2=200,W3=200,W4=5,W7=40,W8=300,W9=2000,W10=5"]


def bench(*args: str) -> dict:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("litejobs", "bench", "--json", *args, stdout=out, stderr=err)
    except SystemExit as exit:
        raise AssertionError(f"bench exited with {exit.code}: {err.getvalue()}") from exit
    return json.loads(out.getvalue())


def database_exists(name: str) -> bool:
    with connection._nodb_cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        return cursor.fetchone() is not None


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_every_workload_runs_beside_its_floor_in_a_scratch_database(settings):
    # Short intervals so a 2-second idle window sees heartbeats and polls on both sides.
    settings.LITEJOBS = {"HEARTBEAT": "0.5s", "POLL_INTERVAL": "1s", "LEASE": "5s"}
    own = record.enqueue(label="the project's own job", value=1)

    report = bench(*TINY, "--processes", "2", "--idle-seconds", "2")

    env = report["environment"]
    assert env["postgresql"].split(".")[0].isdigit()
    assert env["fsync"] in ("on", "off")
    assert env["synchronous_commit"] in ("on", "off", "local", "remote_write", "remote_apply")
    assert env["python"].startswith("3.")
    assert env["django"][0].isdigit()
    assert env["cpus"] >= 1
    assert env["database"] == f"{connection.settings_dict['NAME']}_litejobs_bench"
    assert report["settings"]["HEARTBEAT"] == "0.5s"
    assert report["settings"]["CLAIM_BATCH"] == 16
    assert "client-side" in report["parameters"]["w5_method"] or (
        "pg_stat_statements" in report["parameters"]["w5_method"]
    )

    rows = defaultdict(list)
    for row in report["rows"]:
        rows[row["workload"]].append(row)
        for side in ("litejobs", "floor"):
            assert 0 < row[side]["min"] <= row[side]["median"] <= row[side]["max"], row
        assert row["ratio"] == pytest.approx(row["litejobs"]["median"] / row["floor"]["median"])
        assert row["better"] in ("higher", "lower")
    assert sorted(rows) == sorted(["W1", "W2", "W3", "W4", "W5", "W7", "W8", "W9", "W10"])
    [steps] = rows["W7"]
    assert (steps["figure"], steps["unit"]) == ("steps", "steps/s")
    [outbox] = rows["W8"]
    assert (outbox["figure"], outbox["unit"]) == ("rate", "rows/s")
    assert "300 staged messages" in outbox["variant"]
    assert [r["figure"] for r in rows["W2"]] == ["rate", "per 1,000"]
    assert len(rows["W3"]) == 4  # default, --concurrency 1, atomic=False, 2 processes
    assert any("2 worker processes" in r["variant"] for r in rows["W3"])
    assert [r["figure"] for r in rows["W4"]] == ["p50", "p95", "max"]
    assert [(r["figure"], r["target"]) for r in rows["W10"]] == [
        ("p50", ""),
        ("p95", "<= 10 ms"),
        ("max", ""),
    ]
    assert "5 jobs due 50-500 ms after their enqueue" in rows["W10"][0]["variant"]
    assert {r["baseline"] for r in rows["W9"]} == {"empty table"}
    assert sorted(report["floors"]) == sorted(rows)

    # The project's database was never touched, and the scratch database is gone.
    assert list(Job.objects.values_list("id", "state")) == [(own.id, "ready")]
    assert not database_exists(env["database"])


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_only_runs_the_chosen_workloads_and_keep_db_keeps_the_scratch_database():
    report = bench(*TINY, "--only", "w1,W2", "--keep-db")
    name = report["environment"]["database"]
    try:
        assert {row["workload"] for row in report["rows"]} == {"W1", "W2"}
        assert database_exists(name)
        # A kept database is reused by the next --keep-db run (migrated again, emptied again).
        again = bench(*TINY, "--only", "W1", "--keep-db")
        assert again["environment"]["database"] == name
        assert again["rows"][0]["litejobs"]["median"] > 0
    finally:
        with connection._nodb_cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
