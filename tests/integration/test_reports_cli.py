"""``manage.py litejobs report list|show|cancel|explain``: output, ``--json``, the refusals'
codes and the exit codes, and a filter value given through ``--params`` planned as data."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection

from litejobs.core.enums import ReportState
from litejobs.models import OperatorAction, ReportLimits, ReportRun
from tests.integration.test_cli import failing, litejobs
from tests.reports_helpers import RANGE, reader, sales
from tests.testapp import reports

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)


def queued_run(username="ann", tenant="north"):
    """A run the worker has yet to write: more sales than the request budget."""
    if not ReportRun.objects.filter(tenant=tenant).exists():
        sales(tenant, 23)
    run = reports.sales.request(user=reader(username, tenant), params=RANGE)
    assert isinstance(run, ReportRun)
    return run


def test_report_list_gives_each_report_with_its_limits_rows_and_live_runs(clock):
    queued_run("ann")
    queued_run("bob")
    running = queued_run("cid")
    ReportRun.objects.filter(pk=running.pk).update(state=ReportState.RUNNING)
    ReportRun.objects.create(
        report="tests.sales", state=ReportState.DONE, format="csv", created_at=clock.now()
    )
    ReportLimits.objects.filter(report="tests.sales").update(
        max_rows=500, max_seconds=timedelta(minutes=2), updated_by="ops"
    )

    found = {row["name"]: row for row in json.loads(litejobs("report", "list", "--json")[0])}
    assert set(found) == {"tests.sales", "tests.sales_ndjson"}
    listed = found["tests.sales"]
    assert listed["runs"] == {"queued": 2, "running": 1}
    assert listed["limits"] == {
        "max_range": "31d",
        "max_rows": 500,
        "max_seconds": "2m",
        "max_concurrent": 2,
        "max_bytes": 50_000_000,
        "lifetime": "1h",
        "request_budget": 10,
        "updated_at": clock.now().isoformat(),
        "updated_by": "ops",
    }
    assert (listed["format"], listed["paging"], listed["permission"]) == (
        "csv",
        {"mode": "pages", "size": 5},
        "testapp.export_sale",
    )
    assert listed["need"] == {
        "volume": 100_000,
        "latency_target": "1m",
        "max_result": 100_000,
        "operator": "test ops",
    }
    # The other report's row is seeded from its declaration on this first read.
    assert found["tests.sales_ndjson"]["limits"]["updated_by"] == "declaration"
    assert found["tests.sales_ndjson"]["runs"] == {"queued": 0, "running": 0}

    out, _ = litejobs("report", "list")
    assert "tests.sales  (csv, pages of 5; declared in tests.testapp.reports)" in out
    assert "  limits      max_range 31d, max_rows 500, max_seconds 2m, max_concurrent 2" in out
    assert "  runs        1 running, 2 queued" in out
    assert "  need        volume 100000, latency 1m, max_result 100000, operator test ops" in out


def test_report_show_gives_a_runs_state_parameters_and_stop(clock):
    run = queued_run()
    data = json.loads(litejobs("report", "show", str(run.pk), "--json")[0])
    assert (data["id"], data["report"], data["state"]) == (run.pk, "tests.sales", "queued")
    assert data["parameters"] == RANGE
    assert (data["requester_name"], data["tenant"], data["format"]) == ("ann", "north", "csv")
    assert data["output_path"].startswith("litejobs/reports/north-")
    assert (data["created_at"], data["expires_at"], data["job_id"]) == (
        clock.now().isoformat(),
        None,
        run.job_id,
    )
    out, _ = litejobs("report", "show", str(run.pk))
    assert f"to cancel it: manage.py litejobs report cancel {run.pk} --by WHO" in out

    ReportRun.objects.filter(pk=run.pk).update(
        state=ReportState.STOPPED,
        stop_reason="report-max-rows",
        error="it read more than 100,000 rows (max_rows)",
        row_count=15,
        bytes=2048,
        parts=4,
    )
    out, _ = litejobs("report", "show", str(run.pk))
    assert out.splitlines()[0] == f"Report run #{run.pk}  tests.sales  (stopped)"
    assert "  requester   ann" in out
    assert "  rows        15" in out
    assert "  bytes       2KB in 4 parts" in out
    assert "  stopped     [report-max-rows] it read more than 100,000 rows (max_rows)" in out
    assert "to cancel it" not in out


def test_report_cancel_cancels_a_live_run_once(clock):
    run = queued_run()
    data = json.loads(
        litejobs(
            "report", "cancel", str(run.pk), "--by", "ops", "--reason", "wrong range", "--json"
        )[0]
    )
    assert data == {
        "id": run.pk,
        "report": "tests.sales",
        "was": "queued",
        "state": "cancelled",
        "cancelled_by": "ops",
        "reason": "wrong range",
    }
    run.refresh_from_db()
    assert (run.state, run.cancelled_by, run.finished_at) == ("cancelled", "ops", clock.now())
    [logged] = OperatorAction.objects.all()
    assert (logged.verb, logged.by, logged.reason, logged.filter) == (
        "report-cancel",
        "ops",
        "wrong range",
        {"run": run.pk, "report": "tests.sales"},
    )

    out, _ = failing(1, "report", "cancel", str(run.pk), "--by", "ops", "--json")
    assert json.loads(out)["code"] == "report-not-cancellable"
    _, err = failing(1, "report", "cancel", str(run.pk), "--by", "ops")
    assert err.startswith(f"[report-not-cancellable] Report run #{run.pk} of tests.sales has")
    assert OperatorAction.objects.count() == 1


def test_report_cancel_of_a_running_run_says_the_worker_stops_it(clock, monkeypatch):
    monkeypatch.setattr("getpass.getuser", lambda: "ops-person")
    run = queued_run()
    ReportRun.objects.filter(pk=run.pk).update(state=ReportState.RUNNING)
    out, _ = litejobs("report", "cancel", str(run.pk))
    assert out == (
        f"Report run #{run.pk} of tests.sales is cancelled (it was running): its worker stops "
        "it at its next page and removes what it wrote.\n"
    )
    assert ReportRun.objects.get(pk=run.pk).cancelled_by == "cli:ops-person"


def test_a_missing_run_is_refused_as_unknown(clock):
    for verb in ("show", "cancel"):
        out, _ = failing(1, "report", verb, "999999", "--json")
        assert json.loads(out) == {
            "code": "report-unknown",
            "message": "No report run has id 999999; the admin's report runs list them.",
        }
    _, err = failing(1, "report", "show", "999999")
    assert err.startswith("[report-unknown] No report run has id 999999")


def test_report_explain_plans_the_first_read_with_representative_parameters(clock):
    queued_run("ann", "north")
    data = json.loads(litejobs("report", "explain", "tests.sales", "--json")[0])
    # The longest range the limits allow, ending today, for the tenant of the latest run.
    assert data["parameters"] == {"start": "2026-01-30", "end": "2026-03-01"}
    assert data["tenant"] == "north"
    plan = "\n".join(data["plan"])
    assert "testapp_sale" in plan and "Limit" in plan
    assert "'north'" in plan and "'2026-01-30'" in plan

    sales("south", 1)  # a tenant the report knows: its query finds a row of it
    out, err = litejobs(
        "report", "explain", "tests.sales", "--tenant", "south", "--params", json.dumps(RANGE)
    )
    assert out.startswith(
        "Plan of tests.sales's first read for tenant 'south', parameters "
        '{"end": "2026-02-28", "start": "2026-02-01"}:\n'
    )
    assert "'south'" in out and "'2026-02-01'" in out
    assert err == ""


def test_report_explain_plans_an_ndjson_report_too(clock):
    sales("north", 1)
    data = json.loads(
        litejobs(
            "report",
            "explain",
            "tests.sales_ndjson",
            "--tenant",
            "north",
            "--params",
            json.dumps(RANGE),
            "--json",
        )[0]
    )
    assert "json_build_object" not in data["plan"][0]  # the plan, not an error
    assert "'north'" in "\n".join(data["plan"])


def test_report_explain_without_a_run_warns_on_stderr_and_keeps_stdout_json(clock):
    out, err = litejobs("report", "explain", "tests.sales", "--json")
    assert json.loads(out)["tenant"] == ""
    assert err.startswith("No run of tests.sales yet names a tenant")


def test_report_explain_refuses_bad_params_with_their_codes(clock):
    for given in ("{not json", "[1, 2]"):
        out, _ = failing(2, "report", "explain", "tests.sales", "--params", given, "--json")
        refusal = json.loads(out)
        assert refusal["code"] == "report-params-not-json"
        assert "--params is a JSON object of the report's parameters" in refusal["message"]
    _, err = failing(2, "report", "explain", "tests.sales", "--params", "{not json")
    assert err.startswith("[report-params-not-json] --params is a JSON object")

    too_long = {"start": "2026-01-01", "end": "2026-03-01"}
    for given, code in (
        (too_long, "report-range-too-long"),
        ({**RANGE, "amount": "1"}, "report-param-unknown"),
        ({"start": "2026-01-01"}, "report-range-missing"),
    ):
        out, _ = failing(
            1, "report", "explain", "tests.sales", "--params", json.dumps(given), "--json"
        )
        assert json.loads(out)["code"] == code
    out, _ = failing(1, "report", "explain", "tests.nothing", "--json")
    assert json.loads(out)["code"] == "report-unknown"


INJECTION = "paid' OR 1=1; DROP TABLE testapp_sale; --"


def test_a_filter_value_given_through_params_is_planned_as_one_bound_value(clock):
    sales("north", 3)
    given = {**RANGE, "status": INJECTION}
    data = json.loads(
        litejobs(
            "report",
            "explain",
            "tests.sales",
            "--tenant",
            "north",
            "--params",
            json.dumps(given),
            "--json",
        )[0]
    )
    plan = "\n".join(data["plan"])
    # The whole text is one value compared with the column: its quote doubled, inside one
    # literal, and nothing of it read as SQL.
    assert "(status)::text = 'paid'' OR 1=1; DROP TABLE testapp_sale; --'::text" in plan
    assert data["parameters"]["status"] == INJECTION
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM testapp_sale")
        assert cursor.fetchone() == (3,)


def test_report_explain_refuses_a_tenant_the_report_knows_nothing_of(clock):
    queued_run("ann", "north")
    args = ("report", "explain", "tests.sales", "--params", json.dumps(RANGE))
    out, _ = failing(1, *args, "--tenant", "nosuch", "--json")
    refused = json.loads(out)
    assert refused["code"] == "report-tenant-unknown"
    assert "knows no tenant 'nosuch'" in refused["message"]
    assert "tenants its runs name: north" in refused["message"]
    _, err = failing(1, *args, "--tenant", "")
    assert err.startswith("[report-tenant-unknown] Report 'tests.sales' knows no tenant ''")
    sales("south", 1)  # no run names it yet, but its query finds a row of it in the range
    assert "'south'" in litejobs(*args, "--tenant", "south")[0]
    assert "'north'" in litejobs(*args, "--tenant", "north")[0]
