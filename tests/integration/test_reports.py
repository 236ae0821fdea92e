"""Reports: a request answered within its budget or run by the worker page by page, to
tenant-scoped storage, downloaded through a short-lived signed link; each limit, the audit
row, cancellation, expiry, safe CSV and inert filters."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from django.contrib.auth.models import Permission, User
from django.core.files.storage import default_storage
from django.db import connection

from litejobs import Audit, Limits, Need, Paging, report
from litejobs.exceptions import DeclarationError, LitejobsError
from litejobs.models import Job, ReportAudit, ReportLimits, ReportRun
from litejobs.reports import (
    ReportOutput,
    ReportParamsInvalid,
    ReportRefused,
    ReportStopped,
    expiry,
    limits,
    storage,
)
from litejobs.reports.declarations import reports as registry
from tests.reports_helpers import RANGE, reader, sales
from tests.testapp import reports
from tests.testapp.models import Sale

pytestmark = pytest.mark.django_db(transaction=True)

GOLDEN = Path(__file__).parent / "golden" / "sales.csv"


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)


@pytest.fixture
def ann(db):
    return reader("ann", "north")


@pytest.fixture
def declared():
    """Declare reports for one test (forgotten afterwards), complete unless told."""
    names: list[str] = []

    def make(name: str, **options):
        options = {
            "columns": ["number", "customer", "note"],
            "query": reports.sales_query,
            "tenant": reports.member_tenant,
            "limits": Limits(max_range="31d"),
            "request_budget": 10,
            "paging": Paging.pages(size=5),
            "audit": Audit(reason="tests", target="sales"),
            "permission": "testapp.export_sale",
            "need": Need(volume=10, latency_target="1s", max_result=10, operator="tests"),
            **options,
        }
        names.append(name)
        return report(name, **options)

    yield make
    for name in names:
        registry.unregister(name)


def run_to_end(run_worker, run: ReportRun) -> ReportRun:
    run_worker(queues=["reports"])
    run.refresh_from_db()
    return run


def downloaded(client, user, run: ReportRun) -> bytes:
    client.force_login(user)
    response = client.get(run.download_url())
    assert response.status_code == 200, response.status_code
    return b"".join(response.streaming_content)


def audited(**where) -> list[tuple[str, str]]:
    """The audit trail's (outcome, code) pairs, oldest first."""
    return list(ReportAudit.objects.filter(**where).order_by("id").values_list("outcome", "code"))


def files_under(path: str) -> list[str]:
    try:
        return default_storage.listdir(path)[1]
    except FileNotFoundError:
        return []


# The budget decides: the request answers, or the worker runs it ------------------------------


def test_a_result_within_the_budget_is_the_answer_itself(clock, ann):
    sales("north", 10)
    answer = reports.sales.request(user=ann, params=RANGE)
    assert isinstance(answer, ReportOutput)
    lines = answer.content.decode().split("\r\n")
    assert lines[0] == "number,customer,amount,status,note,formula,placed"
    assert len(lines) == 12 and lines[-1] == ""
    assert answer.filename == "tests.sales-2026-03-01.csv"
    assert answer.response()["Content-Disposition"] == (
        'attachment; filename="tests.sales-2026-03-01.csv"'
    )
    assert (
        not ReportRun.objects.exists()
        and not Job.objects.filter(name="litejobs.report_run").exists()
    )


def test_one_row_over_the_budget_is_a_run_the_worker_writes_page_by_page(
    clock, ann, run_worker, client
):
    sales("north", 11)
    run = reports.sales.request(user=ann, params=RANGE)
    assert isinstance(run, ReportRun) and run.state == "queued"
    assert (run.requester, run.tenant, run.parameters) == (
        ann,
        "north",
        {"start": "2026-02-01", "end": "2026-02-28"},
    )
    run = run_to_end(run_worker, run)
    # The head, then pages of 5, 5 and 1 rows.
    assert (run.state, run.row_count, run.parts, run.progress) == ("done", 11, 4, 100)
    assert run.expires_at == clock.now() + timedelta(hours=1)
    body = downloaded(client, ann, run)
    assert len(body.decode().split("\r\n")) == 13
    assert run.bytes == len(body)
    with default_storage.open(f"{run.output_path}/manifest.json") as file:
        manifest = json.load(file)
    assert [part["name"] for part in manifest["parts"]] == [f"part-00000{n}.csv" for n in range(4)]
    assert manifest["rows"] == 11


def test_the_budget_is_a_setting_row_an_operator_changes(clock, ann):
    sales("north", 11)
    assert isinstance(reports.sales.request(user=ann, params=RANGE), ReportRun)
    ReportLimits.objects.filter(report="tests.sales").update(request_budget=20)
    assert isinstance(reports.sales.request(user=ann, params=RANGE), ReportOutput)


# The limits ----------------------------------------------------------------------------------


def test_a_range_over_max_range_is_refused_and_nothing_is_written(clock, ann):
    sales("north", 30)
    with pytest.raises(ReportParamsInvalid) as refused:
        reports.sales.request(user=ann, params={"start": "2026-01-01", "end": "2026-02-02"})
    assert refused.value.code == "report-range-too-long"
    assert "31d" in str(refused.value) and "max_range" in str(refused.value)
    assert not ReportRun.objects.exists()
    assert audited() == [("refused", "report-range-too-long")]
    assert not Job.objects.filter(name="litejobs.report_run").exists()


def test_a_range_of_dates_counts_its_first_and_last_day(clock, ann):
    january = {"start": "2026-01-01", "end": "2026-01-31"}
    assert reports.sales.request(user=ann, params=january).row_count == 0
    with pytest.raises(ReportParamsInvalid, match="32d"):
        reports.sales.request(user=ann, params={**january, "end": "2026-02-01"})


def test_max_range_read_from_the_setting_row(clock, ann):
    ReportLimits.objects.create(
        report="tests.sales",
        max_range=timedelta(days=7),
        max_rows=100,
        max_seconds=timedelta(minutes=1),
        max_concurrent=1,
        max_bytes=10**6,
        lifetime=timedelta(hours=1),
        request_budget=10,
        updated_at=clock.now(),
    )
    with pytest.raises(ReportParamsInvalid, match="7d"):
        reports.sales.request(user=ann, params={"start": "2026-02-01", "end": "2026-02-09"})


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"start": "2026-02-01"}, "report-range-missing"),
        ({"start": "2026-02-10", "end": "2026-02-01"}, "report-range-invalid"),
        ({"start": "yesterday", "end": "2026-02-01"}, "report-range-invalid"),
        ({**RANGE, "colour": "red"}, "report-param-unknown"),
        ({**RANGE, "status": ["paid"]}, "report-param-invalid"),
        ({**RANGE, "status": "x" * 501}, "report-param-invalid"),
    ],
)
def test_refused_params_have_a_code_and_write_nothing(clock, ann, params, code):
    with pytest.raises(ReportParamsInvalid) as refused:
        reports.sales.request(user=ann, params=params)
    assert refused.value.code == code
    assert not ReportRun.objects.exists() and audited() == [("refused", code)]


def set_limits(**values):
    limits.current(registry["tests.sales"])  # seeded from the declaration if new
    ReportLimits.objects.filter(report="tests.sales").update(**values)


@pytest.mark.parametrize(
    ("limit", "value", "named"),
    [
        ("max_rows", 12, "12"),
        ("max_bytes", 300, "300"),
        # It started ten minutes ago (a worker died on it): its five minutes are spent.
        ("max_seconds", None, "5m"),
    ],
)
def test_past_a_limit_a_run_is_stopped_and_offers_nothing(
    clock, ann, run_worker, limit, value, named
):
    sales("north", 23)
    run = reports.sales.request(user=ann, params=RANGE)
    if value is None:
        ReportRun.objects.filter(pk=run.pk).update(started_at=clock.now() - timedelta(minutes=10))
    else:
        set_limits(**{limit: value})
    run = run_to_end(run_worker, run)
    assert (run.state, run.stop_reason) == ("stopped", f"report-{limit.replace('_', '-')}")
    assert named in run.error and limit in run.error
    assert run.row_count <= 12 and (limit != "max_bytes" or run.bytes <= 300)
    assert files_under(run.output_path) == [] and run.removed_at is not None
    with pytest.raises(LitejobsError, match="report-not-ready"):
        run.download_url()


@pytest.mark.parametrize(
    ("limit", "value"), [("max_rows", 5), ("max_bytes", 400), ("max_bytes", 60)]
)
def test_an_answer_within_the_budget_keeps_max_rows_and_max_bytes(clock, ann, limit, value):
    sales("north", 8)
    set_limits(**{limit: value})
    with pytest.raises(ReportStopped) as refused:
        reports.sales.request(user=ann, params=RANGE)
    code = f"report-{limit.replace('_', '-')}"
    assert refused.value.code == code and limit in str(refused.value)
    assert not ReportRun.objects.exists() and audited() == [("refused", code)]
    set_limits(**{limit: 10**6})
    assert reports.sales.request(user=ann, params=RANGE).row_count == 8


def test_max_bytes_cuts_a_page_while_it_is_read(clock, ann, run_worker, declared, monkeypatch):
    from litejobs.reports import reading

    wide = declared("tests.wide", columns=["number", "note"], paging=Paging.pages(size=50))
    sales("north", 40, note="x" * 10_000)  # 400KB of notes
    set_limits_of("tests.wide", max_bytes=25_000)  # two notes and a half
    handed: list[int] = []
    read = reading.Pages.read

    def counted(self, *args, **kwargs):
        rows = read(self, *args, **kwargs)
        handed.append(len(rows))
        return rows

    monkeypatch.setattr(reading.Pages, "read", counted)
    with pytest.raises(ReportStopped) as refused:
        wide.request(user=ann, params=RANGE)  # within the budget of 10 rows in rows
    assert refused.value.code == "report-max-bytes"
    assert handed == [3]  # PostgreSQL handed over the rows that start within 25KB, no more
    set_limits_of("tests.wide", max_bytes=45_000, request_budget=1)
    run = run_to_end(run_worker, wide.request(user=ann, params=RANGE))
    assert (run.state, run.stop_reason) == ("stopped", "report-max-bytes")
    assert handed[1:] == [2, 5]  # the budget's first read; then one page of 50, cut at 5
    assert run.row_count == 0 and run.bytes < 45_000


def set_limits_of(name: str, **values):
    limits.current(registry[name])
    ReportLimits.objects.filter(report=name).update(**values)


def test_a_page_query_running_past_max_seconds_is_cancelled_by_the_database(
    clock, ann, run_worker, declared
):
    from django.db.models import F, Func

    def slow(params, tenant):
        return Sale.objects.filter(tenant=tenant).annotate(
            pause=Func(F("id") * 0 + 0.3, function="pg_sleep")
        )

    slow_report = declared(
        "tests.slow",
        query=slow,
        columns=["number", "pause"],
        limits=Limits(max_seconds="1s"),
        request_budget=1,
    )
    sales("north", 8)
    run = slow_report.request(user=ann, params={})
    run = run_to_end(run_worker, run)
    assert (run.state, run.stop_reason) == ("stopped", "report-max-seconds")


def test_each_run_carries_its_reports_max_concurrent_to_every_workers_claim(clock, ann):
    sales("north", 11)
    set_limits(max_concurrent=3)
    reports.sales.request(user=ann, params=RANGE)
    run = reports.sales.request(user=ann, params=RANGE)
    job = Job.objects.get(pk=run.job_id)
    assert (job.concurrency_key, job.concurrency_limit) == ("report:tests.sales", 3)


@pytest.mark.parametrize("budget", [31, 1])
def test_a_grouped_query_read_in_one_go_keeps_its_groups(
    clock, ann, run_worker, client, declared, budget
):
    from django.db.models import Count, Sum

    def per_day(params, tenant):
        mine = Sale.objects.filter(tenant=tenant, placed__range=(params["start"], params["end"]))
        return mine.values("placed").annotate(sales=Count("id"), total=Sum("amount"))

    daily = declared(
        "tests.daily",
        query=per_day,
        columns=["placed", "sales", "total"],
        paging=Paging.none(reason="one row per day of at most 31 days"),
        request_budget=budget,
    )
    sales("north", 30)  # two sales on each of the first two days
    answer = daily.request(user=ann, params=RANGE)
    if budget == 1:
        answer = downloaded(client, ann, run_to_end(run_worker, answer))
    else:
        answer = answer.content
    rows = sorted(answer.decode().split("\r\n")[1:-1])
    assert len(rows) == 28
    assert rows[:3] == ["2026-02-01,2,49.00", "2026-02-02,2,51.00", "2026-02-03,1,12.50"]


def test_a_filter_value_its_field_cannot_take_or_a_filter_no_field_has_is_coded(
    clock, ann, declared
):
    by_amount = declared("tests.by_amount", filters=["amount"])
    with pytest.raises(ReportParamsInvalid) as refused:
        by_amount.request(user=ann, params={**RANGE, "amount": "ten"})
    assert refused.value.code == "report-param-invalid" and "'amount'" in str(refused.value)
    by_colour = declared("tests.by_colour", filters=["colour"])
    with pytest.raises(ReportRefused) as refused:
        by_colour.request(user=ann, params={**RANGE, "colour": "red"})
    assert refused.value.code == "report-query-invalid"
    assert not ReportRun.objects.exists()
    assert audited() == [("refused", "report-param-invalid"), ("refused", "report-query-invalid")]


def test_a_run_keeps_a_primary_key_of_any_json_unfriendly_type_as_its_place(clock, ann):
    from uuid import uuid4

    sales("north", 11)
    run = reports.sales.request(user=ann, params=RANGE)
    key = uuid4()
    ReportRun.objects.filter(pk=run.pk).update(last_key=key)
    run.refresh_from_db()
    assert run.last_key == str(key)


# Cancellation and expiry ----------------------------------------------------------------------


def after_part(monkeypatch, number: int, then) -> None:
    """Call ``then()`` once the worker has written part ``number`` (before it records it)."""
    write = storage.write

    def write_then(files, name, data):
        write(files, name, data)
        if name.endswith(f"part-{number:06d}.csv"):
            then()

    monkeypatch.setattr(storage, "write", write_then)


def test_a_run_cancelled_mid_run_stops_at_its_next_page_and_offers_nothing(
    clock, ann, run_worker, monkeypatch
):
    sales("north", 23)
    run = reports.sales.request(user=ann, params=RANGE)
    after_part(monkeypatch, 2, lambda: ReportRun.objects.get(pk=run.pk).cancel(by="ann"))
    run = run_to_end(run_worker, run)
    assert (run.state, run.cancelled_by) == ("cancelled", "ann")
    assert run.row_count == 5  # the page cancelled under it was never recorded
    assert files_under(run.output_path) == [] and run.removed_at is not None
    assert audited(run=run) == [("queued", ""), ("cancelled", "")]
    with pytest.raises(LitejobsError, match="report-not-ready"):
        run.download_url()


@pytest.mark.parametrize(
    ("estimate", "after_a_page"),
    [
        (3, "5 rows so far; estimate unknown (the planner expected ~3, too few)"),
        (None, "5 rows so far; estimate unknown"),
        (20, "25% of ~20 rows"),
    ],
)
def test_progress_is_a_percent_of_the_estimate_only_while_it_holds(
    clock, ann, run_worker, monkeypatch, estimate, after_a_page
):
    from litejobs.reports import reading

    monkeypatch.setattr(reading.Pages, "estimate", lambda self, cursor: estimate)
    sales("north", 23)
    run = reports.sales.request(user=ann, params=RANGE)
    assert run.progress_text() == "not started"
    seen = []
    after_part(monkeypatch, 2, lambda: seen.append(ReportRun.objects.get(pk=run.pk)))
    run = run_to_end(run_worker, run)
    [first_page] = seen
    assert first_page.row_count == 5 and first_page.progress_text() == after_a_page
    assert first_page.progress == (25 if estimate == 20 else None)  # never 99% of a stale 3
    assert (run.state, run.progress, run.progress_text()) == ("done", 100, "100%")


def test_an_attempt_whose_run_moved_on_under_it_stops_without_removing_its_parts(
    clock, ann, run_worker, monkeypatch
):
    from django.db.models import F

    sales("north", 23)
    run = reports.sales.request(user=ann, params=RANGE)
    # Another attempt (this one's lease lapsed) records part 2 first.
    after_part(
        monkeypatch, 2, lambda: ReportRun.objects.filter(pk=run.pk).update(parts=F("parts") + 1)
    )
    run = run_to_end(run_worker, run)
    assert run.state == "running" and run.removed_at is None
    assert len(files_under(run.output_path)) == 3  # the head and two pages stay


def test_a_queued_run_cancelled_never_writes(clock, ann, run_worker):
    sales("north", 23)
    run = reports.sales.request(user=ann, params=RANGE)
    assert run.cancel(by="ann") is True
    assert run.cancel(by="ann") is False  # it had ended
    run = run_to_end(run_worker, run)
    assert (run.state, run.parts, run.row_count) == ("cancelled", 0, 0)


def test_outputs_past_their_lifetime_are_removed_by_the_expiry_schedule(
    clock, ann, run_worker, client
):
    sales("north", 23)
    run = run_to_end(run_worker, reports.sales.request(user=ann, params=RANGE))
    link = run.download_url(ttl="2h")  # it lives no longer than the output: an hour
    assert expiry.expire() == {"removed": 0, "orphaned": 0}
    client.force_login(ann)
    clock.advance("59m")
    assert client.get(link).status_code == 200
    clock.advance("2m")
    assert expiry.expire() == {"removed": 1, "orphaned": 0}
    run.refresh_from_db()
    assert run.state == "expired" and files_under(run.output_path) == []
    assert client.get(link).status_code == 403  # expired with its output


def test_the_expiry_schedule_is_declared_every_five_minutes():
    from litejobs.scheduling.declarations import get

    declared = get("litejobs.reports_expire")
    assert declared is not None and declared.timetable.every == timedelta(minutes=5)


def test_a_live_run_whose_job_died_is_failed_and_its_parts_removed(clock, ann, run_worker):
    sales("north", 23)
    run = reports.sales.request(user=ann, params=RANGE)
    default_storage.save(f"{run.output_path}/part-000000.csv", __import__("io").BytesIO(b"x"))
    Job.objects.filter(pk=run.job_id).update(state="dead")
    assert expiry.expire() == {"removed": 1, "orphaned": 1}
    run.refresh_from_db()
    assert (run.state, run.stop_reason) == ("failed", "report-job-ended")
    assert files_under(run.output_path) == []


# Tenants, permissions and the link ------------------------------------------------------------


def test_the_output_lies_under_its_tenants_directory(clock, ann, run_worker):
    sales("north", 23)
    run = run_to_end(run_worker, reports.sales.request(user=ann, params=RANGE))
    tenant_dir = storage.tenant_directory("north")
    assert run.output_path.startswith(f"litejobs/reports/{tenant_dir}/tests.sales/{run.pk}-")
    assert tenant_dir != storage.tenant_directory("North") != storage.tenant_directory("south")


def test_a_tenants_rows_are_all_a_user_reads(clock, ann):
    sales("north", 3)
    sales("south", 4)
    answer = reports.sales.request(user=ann, params=RANGE)
    assert answer.row_count == 3
    bob = reader("bob", "south")
    assert reports.sales.request(user=bob, params=RANGE).row_count == 4


def test_another_tenants_user_with_the_permission_is_refused_the_link(
    clock, ann, run_worker, client, caplog
):
    sales("north", 23)
    run = run_to_end(run_worker, reports.sales.request(user=ann, params=RANGE))
    link = run.download_url()
    client.force_login(reader("bob", "south"))
    with caplog.at_level("WARNING", logger="litejobs.reports.views"):
        response = client.get(link)
    assert response.status_code == 404
    assert "report-tenant-mismatch" in caplog.text and "bob" in caplog.text


def test_anonymous_and_unpermitted_users_are_refused_the_link(clock, ann, run_worker, client):
    sales("north", 23)
    run = run_to_end(run_worker, reports.sales.request(user=ann, params=RANGE))
    link = run.download_url()
    signed_out = client.get(link)
    assert signed_out.status_code == 302  # to the login page, back to the link after it
    assert signed_out.url == f"/accounts/login/?next={quote(link)}"
    client.force_login(reader("carl", "north", permitted=False))
    assert client.get(link).status_code == 403


def test_a_link_past_its_ttl_is_refused(clock, ann, run_worker, client):
    sales("north", 23)
    run = run_to_end(run_worker, reports.sales.request(user=ann, params=RANGE))
    link = run.download_url()  # five minutes by default
    client.force_login(ann)
    clock.advance("4m")
    assert client.get(link).status_code == 200
    clock.advance("61s")
    expired = client.get(link)
    assert expired.status_code == 403
    page = expired.content.decode()
    assert "Open the run for a new link" in page and f"report run #{run.pk}" in page
    assert "report-link-expired" in page
    run_page = f"/admin/litejobs/reportrun/{run.pk}/change/"
    assert run_page not in page  # ann may not open the admin's runs: words, not a link
    ann.user_permissions.add(Permission.objects.get(codename="view_reportrun"))
    client.force_login(User.objects.get(pk=ann.pk))
    assert f'<a href="{run_page}">' in client.get(link).content.decode()
    User.objects.filter(pk=ann.pk).update(is_staff=False)  # a user of the project's own pages
    page = client.get(link).content.decode()
    assert "Open the run for a new link: report run" in page
    assert 'href="/admin/' not in page  # no way into the admin they cannot follow


def test_outputs_are_kept_out_of_every_cache(clock, ann, run_worker, client):
    sales("north", 3)
    served = reports.sales.request(user=ann, params=RANGE).response()
    assert set(served["Cache-Control"].split(", ")) == {"private", "no-store"}
    sales("north", 20)
    run = run_to_end(run_worker, reports.sales.request(user=ann, params=RANGE))
    client.force_login(ann)
    response = client.get(run.download_url())
    assert response.status_code == 200
    assert set(response["Cache-Control"].split(", ")) == {"private", "no-store"}


def test_a_tampered_link_is_refused(clock, ann, run_worker, client):
    sales("north", 23)
    run = run_to_end(run_worker, reports.sales.request(user=ann, params=RANGE))
    link = run.download_url()
    client.force_login(ann)
    prefix, _, token = link.rpartition("/")
    body, _, signature = token.partition(":")
    flipped = ("A" if body[0] != "A" else "B") + body[1:]
    assert client.get(f"{prefix}/{flipped}:{signature}").status_code == 404
    assert client.get(f"{prefix}/{token}x").status_code == 404


def test_a_user_without_the_permission_or_a_tenant_cannot_request(clock):
    from django.contrib.auth.models import User

    from litejobs.reports import ReportDenied

    with pytest.raises(ReportDenied, match="report-permission-denied"):
        reports.sales.request(user=reader("carl", "north", permitted=False), params=RANGE)
    loner = User.objects.create_user("loner", is_staff=True, is_superuser=True)
    with pytest.raises(ReportDenied, match="report-tenant-unknown"):
        reports.sales.request(user=loner, params=RANGE)
    assert not ReportRun.objects.exists()
    assert audited() == [
        ("refused", "report-permission-denied"),
        ("refused", "report-tenant-unknown"),
    ]


# Safe output -----------------------------------------------------------------------------------


@pytest.mark.parametrize("lead", ["=", "+", "-", "@", "\t", "\r"])
def test_every_formula_trigger_is_escaped_outside_formula_columns(clock, ann, lead):
    sales("north", 1, note=f"{lead}HYPERLINK(1)", formula=f"{lead}SUM(A1:A2)")
    Sale.objects.update(amount=-5)
    answer = reports.sales.request(user=ann, params=RANGE)
    import csv
    import io

    [header, row] = list(csv.reader(io.StringIO(answer.content.decode(), newline="")))
    values = dict(zip(header, row, strict=True))
    assert values["note"] == f"'{lead}HYPERLINK(1)"
    assert values["formula"] == f"{lead}SUM(A1:A2)"  # a declared formula column
    assert values["amount"] == "-5.00"  # a number, never escaped


@pytest.mark.parametrize(
    ("note", "written"),
    [
        ("x;=cmd|' /C calc'!A0", "\"x;'=cmd|' /C calc'!A0\""),
        ("x\t=cmd", '"x\t\'=cmd"'),
        ("a;+1;-2;@3", "\"a;'+1;'-2;'@3\""),
        ("x\t\t=y", "\"x\t'\t'=y\""),
        ("=a;=b", "\"'=a;'=b\""),
        ("fish; chips", '"fish; chips"'),  # quoted, nothing to escape
        ('say "x;=y"', '"say ""x;\'=y"""'),
    ],
)
def test_a_formula_after_a_semicolon_or_a_tab_is_quoted_and_escaped(clock, ann, note, written):
    sales("north", 1, note=note, formula=note)
    answer = reports.sales.request(user=ann, params=RANGE)
    line = answer.content.decode().split("\r\n")[1]
    assert f",{written}," in line  # the note: a spreadsheet splitting on ; or tab keeps it whole
    # A declared formula column is written as it is, quoted for its separators.
    assert line.split(f"{written},", 1)[1].startswith('"')
    import csv
    import io

    [header, row] = list(csv.reader(io.StringIO(answer.content.decode(), newline="")))
    values = dict(zip(header, row, strict=True))
    assert values["formula"] == note
    # A spreadsheet that ignores the quotes and splits on ; or a tab starts no formula.
    for separator in (";", "\t"):
        for cell in written.strip('"').split(separator)[1:]:
            assert not cell.startswith(("=", "+", "-", "@", "\t")), cell


def test_a_page_with_a_separator_is_written_as_csv_writes_the_others(clock, ann, declared):
    from django.db.models import TextField, Value

    sales("north", 3, note="", formula="")
    Sale.objects.filter(number="N00000").update(note='plain, "quoted"\nline')
    Sale.objects.filter(number="N00001").update(note="semi;colon")
    import csv
    import io

    nulls = declared(
        "tests.nulls",
        columns=["number", "note", "nothing"],
        query=lambda params, tenant: reports.sales_query(params, tenant).annotate(
            nothing=Value(None, output_field=TextField())
        ),
    )
    answer = nulls.request(user=ann, params=RANGE)
    rows = list(csv.reader(io.StringIO(answer.content.decode(), newline="")))
    assert rows[1:] == [
        ["N00000", 'plain, "quoted"\nline', ""],
        ["N00001", "semi;colon", ""],
        ["N00002", "", ""],
    ]
    text = answer.content.decode()
    assert 'N00000,"plain, ""quoted""\nline",\r\n' in text  # NULL: an empty field, as csv
    assert 'N00001,"semi;colon",\r\nN00002,,\r\n' in text


def test_the_output_matches_the_golden_file_byte_for_byte(clock, ann):
    sales("north", 3, note='says "hi", then\nleaves', formula="")
    Sale.objects.filter(number="N00002").update(customer="Zoë Ångström", note="")
    answer = reports.sales.request(user=ann, params={**RANGE, "status": "paid"})
    assert answer.content == GOLDEN.read_bytes()


def test_a_byte_order_mark_and_another_encoding_when_declared(clock, ann, declared):
    sales("north", 2)
    Sale.objects.filter(number="N00001").update(customer="Zoë")
    marked = declared("tests.marked", bom=True)
    assert marked.request(user=ann, params=RANGE).content.startswith(b"\xef\xbb\xbfnumber,")
    latin = declared("tests.latin", encoding="cp1252")
    assert "Zoë".encode("cp1252") in latin.request(user=ann, params=RANGE).content
    Sale.objects.filter(number="N00001").update(customer="Zoë 日本")
    with pytest.raises(ReportRefused) as refused:
        latin.request(user=ann, params=RANGE)
    assert refused.value.code == "report-unencodable"


def test_ndjson_is_one_object_per_line_in_column_order(clock, ann):
    sales("north", 2, note="=1+1")
    answer = reports.sales_ndjson.request(user=ann, params=RANGE)
    lines = answer.content.decode().split("\n")
    assert lines[-1] == "" and len(lines) == 3
    first = json.loads(lines[0])
    assert list(first) == reports.COLUMNS
    assert first["note"] == "=1+1" and first["amount"] == 10.5
    assert answer.content_type == "application/x-ndjson; charset=utf-8"


@pytest.mark.parametrize(
    "hostile",
    [
        "paid' OR '1'='1",
        "x'); DELETE FROM testapp_sale; --",
        "%s %(x)s {0} $1 \\",
        "paid\x00",
    ],
)
def test_a_filter_value_is_data_never_sql(clock, ann, hostile):
    sales("north", 4)
    for name in ("status", "customer"):
        try:
            answer = reports.sales.request(user=ann, params={**RANGE, name: hostile})
        except ReportParamsInvalid as refused:
            assert "\x00" in hostile and refused.code == "report-param-invalid"
            continue  # PostgreSQL text holds no NUL: refused before the query
        assert answer.row_count == 0
    assert Sale.objects.count() == 4


def test_a_range_value_is_data_never_sql(clock, ann):
    with pytest.raises(ReportParamsInvalid) as refused:
        reports.sales.request(user=ann, params={"start": "2026-02-01'; --", "end": "2026-02-02"})
    assert refused.value.code == "report-range-invalid"


def test_every_value_reaches_postgresql_as_a_bound_parameter(clock, ann):
    from django.test.utils import CaptureQueriesContext

    sales("north", 1)
    with CaptureQueriesContext(connection) as captured:
        reports.sales.request(user=ann, params={**RANGE, "customer": "needle-7431"})
    [page] = [q["sql"] for q in captured.captured_queries if "page.k" in q["sql"]]
    assert "needle-7431" not in page and "north" not in page and "2026-02" not in page


# The audit row ---------------------------------------------------------------------------------


def test_each_read_writes_its_audit_row(clock, ann, run_worker, client):
    sales("north", 8)
    reports.sales.request(user=ann, params={**RANGE, "status": "paid"})
    served = ReportAudit.objects.get()
    assert (served.user, served.user_name, served.tenant, served.outcome) == (
        ann,
        "ann",
        "north",
        "served",
    )
    assert (served.reason, served.target, served.row_count, served.parameters) == (
        "sales reconciliation",
        "sales",
        4,
        {**RANGE, "status": "paid"},
    )
    assert served.at == clock.now()
    Sale.objects.all().delete()
    sales("north", 23)
    run = run_to_end(run_worker, reports.sales.request(user=ann, params=RANGE))
    queued, done = ReportAudit.objects.filter(run=run).order_by("id")
    assert (queued.outcome, queued.row_count, queued.parameters) == ("queued", None, run.parameters)
    assert (done.outcome, done.row_count, done.parameters) == ("done", 23, run.parameters)
    assert (done.user, done.reason, done.target) == (ann, "sales reconciliation", "sales")
    downloaded(client, ann, run)
    assert ReportAudit.objects.filter(run=run, outcome="downloaded", user=ann).count() == 1
    assert audited(run=run) == [("queued", ""), ("done", ""), ("downloaded", "")]


def test_the_audit_trail_is_append_only_in_the_database(clock, ann):
    from django.db import DatabaseError, transaction

    sales("north", 3)
    reports.sales.request(user=ann, params=RANGE)
    row = ReportAudit.objects.get()
    for change in (
        lambda: ReportAudit.objects.filter(pk=row.pk).update(outcome="done"),
        lambda: ReportAudit.objects.filter(pk=row.pk).update(row_count=0),
        lambda: ReportAudit.objects.filter(pk=row.pk).delete(),
    ):
        with pytest.raises(DatabaseError), transaction.atomic():
            change()
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM litejobs_reportaudit")
    row.refresh_from_db()
    assert (row.outcome, row.row_count) == ("served", 3)
    ann.delete()  # the person column alone may change: a user's deletion nulls it
    row.refresh_from_db()
    assert (row.user_id, row.user_name) == (None, "ann")


@pytest.mark.parametrize("ended", ["done", "stopped", "cancelled", "expired"])
def test_a_finished_run_job_is_not_retried_and_its_audit_stays(
    clock, ann, run_worker, client, ended
):
    from litejobs.exceptions import TransitionRefused
    from litejobs.jobs import operations
    from litejobs.models import OperatorAction

    sales("north", 23)
    if ended == "stopped":
        set_limits(max_rows=12)
    run = run_to_end(run_worker, reports.sales.request(user=ann, params=RANGE))
    if ended == "done":
        downloaded(client, ann, run)
    elif ended == "expired":
        clock.advance("61m")
        expiry.expire()
    elif ended == "cancelled":  # cancelled before its job ran: the job finds it ended
        run = reports.sales.request(user=ann, params=RANGE)
        run.cancel(by="ann")
        run = run_to_end(run_worker, run)
    run.refresh_from_db()
    assert run.state == ended
    assert Job.objects.get(pk=run.job_id).state == "done"
    trail = audited(run=run)
    with pytest.raises(TransitionRefused) as refused:
        operations.retry(run.job_id, by="ops")
    assert refused.value.code == "report-run-ended"
    assert f"report run #{run.pk} of tests.sales, which has ended ({ended})" in str(refused.value)
    assert Job.objects.get(pk=run.job_id).state == "done"
    assert not OperatorAction.objects.exists()
    run_worker(queues=["reports"])
    assert audited(run=run) == trail
    run.refresh_from_db()
    assert run.state == ended


def test_a_run_job_whose_run_still_lives_may_be_retried_and_ends_it_once(clock, ann, run_worker):
    from litejobs.jobs import operations

    sales("north", 23)
    run = reports.sales.request(user=ann, params=RANGE)
    operations.cancel(run.job_id, by="ops")  # the job, not the run
    operations.retry(run.job_id, by="ops")  # the run is still queued: the retry resumes it
    run = run_to_end(run_worker, run)
    assert run.state == "done"
    assert audited(run=run) == [("queued", ""), ("done", "")]


def test_a_deleted_run_job_ends_its_run(clock, ann):
    from litejobs.jobs import operations

    sales("north", 23)
    run = reports.sales.request(user=ann, params=RANGE)
    operations.delete(run.job_id, by="ops")
    assert expiry.expire() == {"removed": 1, "orphaned": 1}
    run.refresh_from_db()
    assert (run.state, run.stop_reason) == ("failed", "report-job-ended")
    assert audited(run=run) == [("queued", ""), ("failed", "report-job-ended")]
    assert expiry.expire() == {"removed": 0, "orphaned": 0}
    assert audited(run=run) == [("queued", ""), ("failed", "report-job-ended")]


# Declarations and checks ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"limits": Limits(max_range="31d", max_rows=10)}, None),
        ({"encoding": "utf-16"}, "byte order"),
        ({"encoding": "no-such-codec"}, "codec"),
        ({"bom": True, "encoding": "cp1252"}, "Unicode"),
        ({"formula_columns": ("missing",)}, "formula_columns"),
        ({"filters": ["start"]}, "range"),
        ({"columns": "number"}, "columns"),
        ({"format": "xlsx"}, "format"),
        ({"permission": "export_sale"}, "app_label.codename"),
    ],
)
def test_a_bad_declaration_is_refused_with_its_fix(declared, options, message):
    if message is None:
        declared("tests.fine", **options)
        return
    with pytest.raises(DeclarationError, match=message):
        declared("tests.bad", **options)


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ({"max_rows": 0}, "max_rows"),
        ({"max_bytes": "lots"}, "max_bytes"),
        ({"max_seconds": "-1s"}, "max_seconds"),
        ({"max_concurrent": True}, "max_concurrent"),
    ],
)
def test_a_bad_limit_is_refused_naming_it(value, name):
    with pytest.raises(DeclarationError, match=name):
        Limits(**value)


def test_the_checks_name_a_report_without_paging_audit_need_or_a_real_permission(declared):
    from litejobs.reports.checks import check_reports

    declared("tests.unbounded", paging=None, audit=None, need=None, permission="testapp.nope")
    found = {m.id for m in check_reports() if m.obj == "tests.unbounded"}
    assert found == {"litejobs.E081", "litejobs.E082", "litejobs.E083", "litejobs.W080"}
    assert not [m for m in check_reports() if m.obj in ("tests.sales", "tests.sales_ndjson")]


def test_an_incomplete_report_is_refused_when_requested(clock, ann, declared):
    unbounded = declared("tests.unbounded", paging=None)
    with pytest.raises(ReportRefused) as refused:
        unbounded.request(user=ann, params=RANGE)
    assert refused.value.code == "report-declaration-incomplete"


# Bad inputs a new user tries: each refused with its code, nothing written ---------------------


def _report_option_misspelt(ctx):
    report("tests.typo", columns=["number"], query=reports.sales_query, limit=Limits())


def _paging_none_without_its_reason(ctx):
    Paging.none()


def _a_name_that_walks_out_of_its_directory(ctx):
    ctx.declared("bad name/../x")


def _a_dot_dot_name(ctx):
    ctx.declared("..")


def _a_negative_need(ctx):
    Need(volume=-1, latency_target="1m", max_result=10, operator="ops")


def _a_need_given_as_text(ctx):
    Need(volume="lots", latency_target="1m", max_result=10, operator="ops")


def _a_lifetime_of_ages(ctx):
    Limits(lifetime=10**12)


def _a_link_of_ages(ctx):
    ctx.done().download_url(ttl=10**12)


def _a_link_past_a_day(ctx):
    ctx.done().download_url(ttl="2d")


def _the_default_link_of_ages(ctx):
    run = ctx.done()
    ctx.settings.LITEJOBS = {"REPORT_LINK_TTL": 10**12}
    run.download_url()


def _a_link_after_the_outputs_lifetime(ctx):
    run = ctx.done()
    ctx.clock.advance("61m")  # before the expiry sweep has removed it
    run.download_url()


def _a_link_to_an_expired_run(ctx):
    run = ctx.done()
    ctx.clock.advance("61m")
    expiry.expire()
    run.refresh_from_db()
    run.download_url()


def _explain_for_no_such_tenant(ctx):
    from django.core.management import call_command

    ctx.done()
    try:
        call_command("litejobs", "report", "explain", "tests.sales", "--tenant", "nosuch")
    except SystemExit:
        raise LitejobsError("refused", code=ctx.refused_code()) from None


class BadInputs:
    """What the bad inputs' cases use: a done run of tests.sales, the frozen clock, settings."""

    def __init__(self, clock, ann, run_worker, settings, declared, capsys):
        self.clock, self.ann, self.run_worker = clock, ann, run_worker
        self.settings, self.declared, self.capsys = settings, declared, capsys

    def done(self) -> ReportRun:
        sales("north", 23)
        run = run_to_end(self.run_worker, reports.sales.request(user=self.ann, params=RANGE))
        assert run.state == "done"
        return run

    def refused_code(self) -> str:
        """The code a CLI refusal printed on stderr."""
        return self.capsys.readouterr().err.partition("]")[0].lstrip("[")


@pytest.mark.parametrize(
    ("case", "code"),
    [
        (_report_option_misspelt, "option-unknown"),
        (_paging_none_without_its_reason, "report-paging-missing"),
        (_a_name_that_walks_out_of_its_directory, "report-invalid"),
        (_a_dot_dot_name, "report-invalid"),
        (_a_negative_need, "report-invalid"),
        (_a_need_given_as_text, "report-invalid"),
        (_a_lifetime_of_ages, "report-invalid"),
        (_a_link_of_ages, "duration-invalid"),
        (_a_link_past_a_day, "duration-invalid"),
        (_the_default_link_of_ages, "duration-invalid"),
        (_a_link_after_the_outputs_lifetime, "report-output-expired"),
        (_a_link_to_an_expired_run, "report-output-expired"),
        (_explain_for_no_such_tenant, "report-tenant-unknown"),
    ],
    ids=lambda value: value.__name__.strip("_") if callable(value) else value,
)
def test_a_bad_report_input_is_refused_with_its_code(
    clock, ann, run_worker, settings, declared, capsys, case, code
):
    context = BadInputs(clock, ann, run_worker, settings, declared, capsys)
    before = {declaration.name for declaration in registry.all()}
    with pytest.raises(LitejobsError) as refused:
        case(context)
    assert refused.value.code == code, refused.value
    assert {declaration.name for declaration in registry.all()} == before  # nothing declared


def test_a_report_link_ttl_of_ages_fails_the_settings_check(settings):
    from litejobs.reports.checks import check_report_settings

    settings.LITEJOBS = {"REPORT_LINK_TTL": "30d"}  # past a century it is litejobs.E004's
    [error] = check_report_settings()
    assert error.id == "litejobs.E084"
    assert "[settings-invalid] LITEJOBS['REPORT_LINK_TTL'] is at most 1d" in error.msg
    settings.LITEJOBS = {"REPORT_LINK_TTL": "1d"}
    assert check_report_settings() == []
