"""``manage.py litejobs pipelines``, ``pipeline show`` and ``pipeline replay``: output,
``--json``, the refusals' codes and the exit codes."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from litejobs import Buffer, pipeline
from litejobs.cli.jobs import acting_user
from litejobs.core.enums import ImportState
from litejobs.ingest.declarations import pipelines as registry
from litejobs.models import (
    BufferedRecord,
    ImportRun,
    IngestCount,
    OperatorAction,
    SetAsideRecord,
)
from tests.testapp import pipelines
from tests.testapp.pipelines import Reason

pytestmark = pytest.mark.django_db


def litejobs(*args):
    """Run ``manage.py litejobs ARGS``; answers (stdout, stderr) of a successful (0) run."""
    out, err = StringIO(), StringIO()
    call_command("litejobs", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def failing(code, *args):
    """Run a verb that must exit with ``code``; answers (stdout, stderr)."""
    out, err = StringIO(), StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("litejobs", *args, stdout=out, stderr=err)
    assert exited.value.code == code
    return out.getvalue(), err.getvalue()


def record(sku, **fields):
    return {
        "sku": sku,
        "name": f"Product {sku}",
        "price": "10",
        "currency": "EUR",
        "status": "active",
        **fields,
    }


def counted(clock, outcome, reason, count, pipeline="tests.catalog"):
    IngestCount.objects.create(
        pipeline=pipeline,
        hour=clock.now().replace(minute=0),
        outcome=outcome,
        reason=reason,
        count=count,
    )


def set_aside(clock, key, reason="discontinued"):
    SetAsideRecord.objects.create(
        pipeline="tests.catalog",
        key=key,
        outcome="dropped" if reason else "errored",
        reason=reason,
        step="parse",
        payload=record(key),
        set_aside_at=clock.now(),
    )


@pytest.fixture
def paging():
    declared = pipeline(
        "tests.cli_paging",
        steps=[pipelines.parse],
        drop_reasons=Reason,
        key=lambda r: r["sku"],
        sink=pipelines.save_product,
        buffer=Buffer(capacity=1, overflow="page"),
    )
    yield declared
    registry.unregister(declared.name)


def test_pipelines_lists_every_declared_pipeline_with_its_fill_and_totals(clock, paging):
    counted(clock, "accepted", "", 5)
    counted(clock, "dropped", "discontinued", 2)
    counted(clock, "errored", "", 1)
    paging.feed([record("A"), record("B")])

    rows = {row["pipeline"]: row for row in json.loads(litejobs("pipelines", "--json")[0])}
    assert set(rows) == {"tests.catalog", "tests.cli_paging"}
    catalog = rows["tests.catalog"]
    assert (catalog["accepted"], catalog["errored"], catalog["buffered"], catalog["capacity"]) == (
        5,
        1,
        0,
        1000,
    )
    assert catalog["dropped"] == {
        "discontinued": 2,
        "below_threshold": 0,
        "poison": 0,
        "overflow": 0,
    }
    assert catalog["freshness"] == "bounded: at most 15m old"
    assert rows["tests.cli_paging"]["over_capacity"] and rows["tests.cli_paging"]["alert"]
    assert rows["tests.cli_paging"]["last_overflow"]["overflow"] == "page"

    out, _ = litejobs("pipelines")
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["pipeline", "buffer", "accepted", "dropped", "errored"]
    assert lines[1].split()[:8] == ["tests.catalog", "0", "/", "1000", "5", "2", "1", "bounded:"]
    assert lines[2].split()[:5] == ["tests.cli_paging", "2", "/", "1", "OVER"]


def test_pipeline_show_gives_the_steps_drops_imports_and_overflows(clock, paging):
    counted(clock, "dropped", "below_threshold", 3)
    set_aside(clock, "A", "below_threshold")
    ImportRun.objects.create(
        pipeline="tests.catalog",
        file="feeds/a.csv",
        format="csv",
        state=ImportState.RUNNING,
        offset=50,
        size=200,
        created_at=clock.now(),
    )
    data = json.loads(litejobs("pipeline", "show", "tests.catalog", "--json")[0])
    assert [(s["kind"], s["name"], s["uses"]) for s in data["steps"]] == [
        ("drop", "parse", ["discontinued"]),
        ("enrich", "price_in_eur", ["rates"]),
        ("drop", "below_threshold", ["below_threshold"]),
    ]
    assert data["dropped"]["below_threshold"] == 3
    assert data["replayable"] == {"below_threshold": 1}
    [run] = data["imports"]
    assert (run["file"], run["progress"], run["state"]) == ("feeds/a.csv", 25.0, "running")
    assert data["buffer"] == {"capacity": 1000, "overflow": "block", "reason": None, "wait": "1s"}
    assert data["overflow_events"] == []
    assert (data["files"], data["sensitive"]) == ({"storage": "default", "prefix": "feeds/"}, [])

    out, _ = litejobs("pipeline", "show", "tests.catalog")
    assert "  1. drop    parse  (discontinued)" in out
    assert "  2. enrich  price_in_eur  (rates)" in out
    assert "below_threshold  3        1" in out
    assert "feeds/a.csv  running  25%" in out
    replay = "manage.py litejobs pipeline replay tests.catalog REASON|errored --reason"
    assert f'after a fix: {replay} "why"' in out
    assert "  files              default:feeds/" in out

    paging.feed([record("A"), record("B")])
    events = json.loads(litejobs("pipeline", "show", "tests.cli_paging", "--json")[0])
    assert [(e["overflow"], e["buffered"], e["fed"]) for e in events["overflow_events"]] == [
        ("page", 0, 2)
    ]


def test_pipeline_replay_feeds_one_reasons_records_back_and_says_how_many(clock):
    set_aside(clock, "A")
    set_aside(clock, "B")
    set_aside(clock, "C", "below_threshold")
    set_aside(clock, "D", "")
    out, _ = litejobs(
        "pipeline", "replay", "tests.catalog", "DISCONTINUED", "--by", "ops", "--reason", "fixed"
    )
    assert out == (
        "Pipeline 'tests.catalog': 2 records dropped as 'discontinued' were fed back into its "
        "buffer; its drain takes them through the steps again.\n"
    )
    assert sorted(BufferedRecord.objects.values_list("key", flat=True)) == ["A", "B"]
    data = json.loads(
        litejobs("pipeline", "replay", "tests.catalog", "errored", "--reason", "x", "--json")[0]
    )
    assert data == {"pipeline": "tests.catalog", "reason": "errored", "replayed": 1}
    again = json.loads(
        litejobs("pipeline", "replay", "tests.catalog", "discontinued", "--reason", "x", "--json")[
            0
        ]
    )
    assert again["replayed"] == 0


def test_a_replay_is_kept_in_the_operator_action_log_with_who_and_why(clock):
    set_aside(clock, "A")
    litejobs(
        "pipeline", "replay", "tests.catalog", "discontinued", "--by", "ops", "--reason", "fixed"
    )
    litejobs("pipeline", "replay", "tests.catalog", "errored", "--reason", "nothing waits")
    rows = OperatorAction.objects.order_by("id").values_list(
        "verb", "by", "affected", "reason", "filter"
    )
    assert list(rows) == [
        (
            "ingest-replay",
            "ops",
            1,
            "fixed",
            {"pipeline": "tests.catalog", "reason": "discontinued"},
        ),
        (
            "ingest-replay",
            acting_user({}),
            0,
            "nothing waits",
            {"pipeline": "tests.catalog", "reason": "errored"},
        ),
    ]
    failing(1, "pipeline", "replay", "tests.catalog", "bogus", "--reason", "x")
    assert OperatorAction.objects.count() == 2  # a refused replay leaves no row


def test_an_unknown_pipeline_or_reason_is_refused_with_its_code(clock):
    out, _ = failing(1, "pipeline", "replay", "tests.nothing", "x", "--reason", "y", "--json")
    assert json.loads(out)["code"] == "pipeline-unknown"
    _, err = failing(1, "pipeline", "show", "tests.nothing")
    assert err.startswith("[pipeline-unknown] No installed app declares a pipeline named")
    out, _ = failing(1, "pipeline", "replay", "tests.catalog", "bogus", "--reason", "y", "--json")
    refusal = json.loads(out)
    assert refusal["code"] == "ingest-reason-unknown"
    assert "discontinued, below_threshold, poison, overflow" in refusal["message"]
    with pytest.raises(CommandError, match="required: DROP_REASON, --reason"):
        litejobs("pipeline", "replay", "tests.catalog")
    with pytest.raises(CommandError, match="required: --reason"):
        litejobs("pipeline", "replay", "tests.catalog", "poison")
