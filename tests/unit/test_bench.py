"""``manage.py litejobs bench``: options refused before anything runs, and how the report
summarises its rounds and prints its tables."""

import csv
import io

import pytest
from django.core.management import CommandError, call_command

from litejobs.bench.files import COLUMNS, discontinued, records, write_catalog
from litejobs.bench.report import Report, Row, Stats, percentile


@pytest.mark.parametrize(
    "args",
    [
        ["--only", "W14"],
        ["--only", "W11G"],
        ["--jobs", "W3=0"],
        ["--jobs", "W11F=0"],
        ["--jobs", "W12=0"],
        ["--jobs", "W5=10"],
        ["--durability", "sometimes"],
        ["--processes", "0"],
        ["--idle-seconds", "-1"],
        ["--rounds", "x"],
    ],
)
def test_bad_options_are_refused_before_anything_runs(args):
    with pytest.raises(CommandError):
        call_command("litejobs", "bench", *args, stdout=io.StringIO(), stderr=io.StringIO())


@pytest.mark.parametrize("count", [1, 99, 100, 101, 2500])
def test_w11s_csv_holds_its_records_and_the_bench_knows_how_many_it_drops(tmp_path, count):
    with write_catalog(tmp_path, count).open(newline="", encoding="utf-8") as file:
        reader = csv.DictReader(file)
        rows = list(reader)
    assert tuple(reader.fieldnames) == COLUMNS
    assert rows == records(count)
    assert len({row["sku"] for row in rows}) == count  # a key each
    assert {row["currency"] for row in rows} == {"EUR", "USD", "GBP"} or count < 3
    assert sum(row["status"] == "discontinued" for row in rows) == discontinued(count)


def test_importing_the_bench_declares_no_pipeline_report_or_model_a_project_would_list():
    from django.apps import apps

    from litejobs.bench import exports, workloads
    from litejobs.ingest.declarations import pipelines
    from litejobs.reports.declarations import reports

    assert workloads.WORKLOADS[-4:] == ("W11", "W11F", "W12", "W13")
    assert "litejobs.bench.catalog" not in pipelines
    assert exports.NAME not in reports
    # W12's model belongs to no installed app: migrations, checks and the admin never see it.
    assert exports.Sale not in apps.get_models()
    with exports.declared() as declared:
        assert reports[exports.NAME] is declared
    assert exports.NAME not in reports


def test_figures_summarise_rounds_and_percentiles_take_the_nearest_rank():
    assert Stats.of([3.0, 1.0, 2.0]) == Stats(2.0, 1.0, 3.0)
    values = [float(n) for n in range(1, 101)]
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.95) == 95.0
    assert percentile([7.0], 0.95) == 7.0


def test_the_table_names_each_durability_variant_and_prints_cpu_per_job():
    def stats(value: float) -> Stats:
        return Stats(value, value, value)

    report = Report(
        environment={
            "postgresql": "15.20",
            "fsync": "on",
            "synchronous_commit": "on",
            "python": "3.12.1",
            "django": "6.1.3",
            "psycopg": "3.3.9",
            "cpus": 2,
            "platform": "Linux",
            "database": "x_litejobs_bench",
            "debug": False,
        },
        settings={},
        parameters={"rounds": 1, "w5_method": "not measured", "durability": ["on", "off"]},
        rows=[
            Row(
                "W1", "2 calls", "rate", "jobs/s", "higher", stats(900), stats(1800), cpu=stats(412)
            ),
            Row(
                "W1",
                "2 calls",
                "rate",
                "jobs/s",
                "higher",
                stats(3000),
                stats(9000),
                durability="off",
                cpu=stats(398),
                floor_cpu=stats(61.5),
            ),
        ],
        durability={"off": {"bench": ["off"], "floor": ["off"], "workers": ["off"]}},
        memory={
            "off": [
                {
                    "checkpoint": 10,
                    "jobs": 100,
                    "workers": [
                        {
                            "peak_at_checkpoint_mb": 80,
                            "peak_at_end_mb": 82,
                            "peak_growth_percent": 2.5,
                            "rss_at_checkpoint_mb": 70,
                            "rss_at_end_mb": 70.7,
                            "rss_growth_percent": 1.0,
                        }
                    ],
                }
            ]
        },
    )
    text = report.render()
    on, off = text.split("== durability off")
    assert "== durability on: synchronous_commit=on" in on
    assert "CPU µs" in on and "412" in on and "398" not in on
    assert ": synchronous_commit=off set on every connection" in off
    assert "answered: bench off; floor off; workers off" in off
    assert "398" in off and "61.5" in off
    assert (
        "W6 round 1, each worker at 10 -> 100 jobs: peak 80.0 -> 82.0 MB (+2.5 %), "
        "resident 70.0 -> 70.7 MB (+1.0 %)"
    ) in off
