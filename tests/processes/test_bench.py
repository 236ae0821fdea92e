"""``manage.py litejobs bench``: every workload beside its floor, in a scratch database, with real
worker processes."""

import io
import json
import os
import subprocess
import sys
from collections import defaultdict

import pytest
from django.core.management import call_command
from django.db import connection

from litejobs.ingest.declarations import pipelines
from litejobs.models import Job
from litejobs.reports.declarations import reports
from tests.testapp.jobs import record

TINY = [
    "--rounds",
    "1",
    "--jobs",
    "W1=50,W2=200,W3=200,W4=5,W6=200,W7=40,W8=300,W9=2000,W10=5,W11=2500,W11F=300,W12=2500,W13=50,W14=200",
]
#: The rows whose client CPU per job the bench measures on both sides.
WITH_CPU = {"W1", "W2", "W3", "W7", "W8", "W11F"}


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
        assert row["durability"] == "on"
        if row["workload"] in WITH_CPU and row["baseline"] != "the rate":
            for side in ("cpu", "floor_cpu"):
                assert 0 < row[side]["min"] <= row[side]["median"] <= row[side]["max"], row
        elif row["workload"] in ("W4", "W5", "W10"):
            assert row["cpu"] is None and row["floor_cpu"] is None, row
    assert sorted(rows) == sorted(
        [
            "W1",
            "W2",
            "W3",
            "W4",
            "W5",
            "W6",
            "W7",
            "W8",
            "W9",
            "W10",
            "W11",
            "W11F",
            "W12",
            "W13",
            "W14",
        ]
    )
    # Durable commits by default, as every connection of litejobs and of the floor answered.
    assert report["parameters"]["durability"] == ["on"]
    assert report["durability"] == {"on": {"bench": ["on"], "floor": ["on"], "workers": ["on"]}}
    drain, peak, resident = rows["W6"]
    assert (drain["figure"], drain["unit"]) == ("drain rate", "jobs/s")
    assert drain["cpu"]["median"] > 0 and drain["floor_cpu"]["median"] > 0
    assert "200 jobs, 4 worker processes" in drain["variant"]
    assert [(r["figure"], r["unit"], r["baseline"]) for r in (peak, resident)] == [
        ("peak RSS", "MB", "at 20 jobs"),
        ("RSS", "MB", "at 20 jobs"),
    ]
    [soak] = report["memory"]["on"]
    assert (soak["checkpoint"], soak["jobs"], len(soak["workers"])) == (20, 200, 4)
    for worker in soak["workers"]:
        # A Django worker's own peak (tens of MB), not the bench process's carried over a fork.
        assert 20 < worker["peak_at_checkpoint_mb"] <= worker["peak_at_end_mb"] < 1000, worker
        assert 20 < worker["rss_at_end_mb"] <= worker["peak_at_end_mb"], worker
        assert worker["rss_growth_percent"] == pytest.approx(
            (worker["rss_at_end_mb"] / worker["rss_at_checkpoint_mb"] - 1) * 100
        )
    assert peak["litejobs"]["median"] == max(w["peak_at_end_mb"] for w in soak["workers"])
    assert resident["litejobs"]["median"] == max(w["rss_at_end_mb"] for w in soak["workers"])
    [drain_full, *_] = rows["W9"]
    assert drain_full["cpu"]["median"] > 0 and drain_full["floor_cpu"]["median"] > 0
    assert all(r["cpu"] is None for r in rows["W9"][1:])
    [steps] = rows["W7"]
    assert (steps["figure"], steps["unit"]) == ("steps", "steps/s")
    [outbox] = rows["W8"]
    assert (outbox["figure"], outbox["unit"]) == ("rate", "rows/s")
    assert "300 staged messages" in outbox["variant"]
    assert [r["figure"] for r in rows["W2"]] == ["rate", "per 1,000"]
    # default, a rate that never binds, a binding rate (two figures), --concurrency 1,
    # atomic=False, 2 processes
    assert len(rows["W3"]) == 7
    rated = [r for r in rows["W3"] if r["baseline"] == "the rate"]
    assert [r["figure"] for r in rated] == ["start rate", "most starts in any 1 s"]
    assert rated[1]["litejobs"]["max"] <= 500  # never above the rate in any second
    assert any("2 worker processes" in r["variant"] for r in rows["W3"])
    assert [r["figure"] for r in rows["W4"]] == ["p50", "p95", "max"]
    assert [(r["figure"], r["target"]) for r in rows["W10"]] == [
        ("p50", ""),
        ("p95", "<= 10 ms"),
        ("max", ""),
    ]
    assert "5 jobs due 50-500 ms after their enqueue" in rows["W10"][0]["variant"]
    assert {r["baseline"] for r in rows["W9"]} == {"empty table"}
    # W11: a worker imported the 2,500-row CSV (checked row by row against what it holds)
    # beside COPY of the same rows, and its memory at 250 rows and at the end.
    imported, import_peak, import_resident = rows["W11"]
    assert (imported["figure"], imported["unit"], imported["target"]) == (
        "rate",
        "records/s",
        ">= 0.3x",
    )
    assert "2,500-row CSV through a drop and an enrich step" in imported["variant"]
    assert imported["cpu"]["median"] > 0 and imported["floor_cpu"]["median"] > 0
    assert [(r["figure"], r["unit"], r["baseline"]) for r in (import_peak, import_resident)] == [
        ("peak RSS", "MB", "at 250 rows"),
        ("RSS", "MB", "at 250 rows"),
    ]
    assert 20 < import_peak["floor"]["median"] <= import_peak["litejobs"]["median"] < 1000
    [fed] = rows["W11F"]
    assert (fed["figure"], fed["unit"]) == ("rate", "records/s")
    assert "300 records through one feed() call" in fed["variant"]
    # W12: a worker exported 2,500 rows (its output checked line by line) beside COPY of the
    # same rows to a file, and a fresh worker's peak memory exporting 250 of them.
    exported, export_peak = rows["W12"]
    assert (exported["figure"], exported["unit"], exported["target"]) == (
        "rate",
        "rows/s",
        ">= 0.3x",
    )
    assert "2,500-row CSV export of a report (7 columns)" in exported["variant"]
    assert exported["cpu"]["median"] > 0 and exported["floor_cpu"]["median"] > 0
    assert (export_peak["figure"], export_peak["unit"], export_peak["baseline"]) == (
        "peak RSS",
        "MB",
        "a fresh worker exporting 250 rows",
    )
    assert 20 < export_peak["floor"]["median"] < 1000
    assert 20 < export_peak["litejobs"]["median"] < 1000
    # W13: 50 lock blocks, each an acquire and a release of one statement apiece.
    assert [(r["figure"], r["target"]) for r in rows["W13"]] == [
        ("round trips", "<= 2"),
        ("p50", ""),
        ("p95", ""),
    ]
    assert rows["W13"][0]["litejobs"]["median"] == 2
    assert "50 litejobs.lock() blocks" in rows["W13"][0]["variant"]
    # W14: a 200-child batch's callback started within a second of its last child's end.
    [callback] = rows["W14"]
    assert (callback["figure"], callback["unit"]) == ("latency", "ms")
    assert "200-child batch" in callback["variant"]
    assert 0 <= callback["litejobs"]["median"] <= 1000
    assert sorted(report["floors"]) == sorted(rows)

    # W11's pipeline and W12's report were declared only while they ran.
    assert "litejobs.bench.catalog" not in pipelines
    assert "litejobs.bench.sales" not in reports
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


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_durability_both_runs_each_workload_with_synchronous_commit_on_then_off():
    options = dict(connection.settings_dict["OPTIONS"])
    report = bench(
        "--rounds", "1", "--only", "W1,W6", "--jobs", "W1=20,W6=40", "--durability", "both"
    )

    assert report["parameters"]["durability"] == ["on", "off"]
    assert report["parameters"]["processes"] == [1, 2, 4, 8]
    # Every connection said so itself: the bench's, the floor's, and the spawned workers'.
    assert report["durability"] == {
        "on": {"bench": ["on"], "floor": ["on"], "workers": ["on"]},
        "off": {"bench": ["off"], "floor": ["off"], "workers": ["off"]},
    }
    assert [(r["durability"], r["workload"], r["figure"]) for r in report["rows"]] == [
        ("on", "W1", "rate"),
        ("off", "W1", "rate"),
        ("on", "W6", "drain rate"),
        ("on", "W6", "peak RSS"),
        ("on", "W6", "RSS"),
        ("off", "W6", "drain rate"),
        ("off", "W6", "peak RSS"),
        ("off", "W6", "RSS"),
    ]
    assert sorted(report["memory"]) == ["off", "on"]
    # The project's own connection settings are as they were.
    assert connection.settings_dict["OPTIONS"] == options


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_w11_runs_in_a_fresh_project_with_debug_on_and_warns(tmp_path):
    """A project as ``django-admin startproject`` makes it (DEBUG = True), with litejobs
    installed: the bench warns that DEBUG costs its figures, and runs."""
    subprocess.run(
        [sys.executable, "-m", "django", "startproject", "fresh", str(tmp_path)], check=True
    )
    db = connection.settings_dict
    database = {
        "ENGINE": "django.db.backends.postgresql",
        **{key: db[key] for key in ("NAME", "USER", "PASSWORD", "HOST", "PORT")},
    }
    settings_file = tmp_path / "fresh" / "settings.py"
    added = (
        f'INSTALLED_APPS += ["pgtrigger", "litejobs"]\nDATABASES = {{"default": {database!r}}}\n'
    )
    settings_file.write_text(settings_file.read_text() + "\n" + added)
    env = {
        k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL")
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "litejobs", "bench", "--only", "W11", *TINY],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert "warning: DEBUG is on" in result.stderr
    assert "W11 floor: one COPY" in result.stdout
