"""Reports in the admin: requesting a report (a download within the budget, a queued run over
it, refusals as form errors), a run's page with its progress and Download button, cancel,
downloads through the admin's own URL, the limits as setting rows, the audit records, and
each user seeing only their own tenant's runs and records."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission, User
from django.urls import path, reverse

from litejobs.core.sizes import format_size
from litejobs.models import OperatorAction, ReportAudit, ReportLimits, ReportRun
from litejobs.models.reports import DownloadLink, sign_link
from tests.reports_helpers import RANGE, reader, sales

pytestmark = pytest.mark.django_db(transaction=True)

#: A project's URLconf with the admin only (no ``litejobs.urls``): downloads go through it.
urlpatterns = [path("admin/", admin.site.urls)]

RUNS = reverse("admin:litejobs_reportrun_changelist")
REQUEST = reverse("admin:litejobs_reportrun_request")
LIMITS = reverse("admin:litejobs_reportlimits_changelist")
AUDITS = reverse("admin:litejobs_reportaudit_changelist")
SALES_FORM = f"{REQUEST}?report=tests.sales"
#: What a staff user who works with reports holds, besides the report's own permission.
VIEWER = ("view_reportrun", "view_reportaudit")


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)


def _form_codes(response) -> list[str]:
    """The codes of the request form's errors, each shown beside its sentence."""
    codes = [error.code for error in response.context["form"].non_field_errors().as_data()]
    shown = re.findall(r'<code class="litejobs-refusal-code">([^<]+)</code>', body(response))
    assert shown == codes
    return codes


def body(response) -> str:
    return response.content.decode()


def audited() -> list[tuple[str, str]]:
    """The audit trail's (outcome, code) pairs, oldest first."""
    return list(ReportAudit.objects.order_by("id").values_list("outcome", "code"))


def staff(username: str, tenant: str, *codenames: str, permitted: bool = True) -> User:
    """A staff user of ``tenant`` with the sales export permission (unless told) and the
    litejobs permissions named."""
    user = reader(username, tenant, permitted=permitted)
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="litejobs", codename__in=codenames)
    )
    return User.objects.get(pk=user.pk)


def page_of(run: ReportRun) -> str:
    return reverse("admin:litejobs_reportrun_change", args=[run.pk])


def listed(html: str, model: str) -> set[int]:
    """The ids of the records a changelist page links to."""
    return {int(pk) for pk in re.findall(rf"/admin/litejobs/{model}/(\d+)/change/", html)}


def download_href(html: str) -> str:
    found = re.search(r'<a href="([^"]+)" id="report-download"', html)
    assert found, "no Download button"
    return found.group(1).replace("&amp;", "&")


def queued(client, **params) -> ReportRun:
    """Request tests.sales through the admin's form; answers the run it queued."""
    response = client.post(SALES_FORM, {**RANGE, **params})
    assert response.status_code == 302, response.content.decode()[:2000]
    return ReportRun.objects.get(pk=int(response.url.rstrip("/").split("/")[-2]))


def body_of(response) -> str:
    return b"".join(response.streaming_content).decode()


# Requesting a report -----------------------------------------------------------------------


def test_the_request_form_downloads_a_small_result_and_queues_a_large_one(client, clock):
    ann = staff("ann", "north", *VIEWER)
    client.force_login(ann)
    sales("north", 4)
    choices = client.get(REQUEST).content.decode()
    assert f'href="{SALES_FORM}"' in choices
    form = client.get(SALES_FORM).content.decode()
    for name in ("start", "end", "status", "customer"):
        assert f'name="{name}"' in form

    small = client.post(SALES_FORM, {**RANGE, "status": "paid"})
    assert small.status_code == 200
    assert small["Content-Disposition"].startswith('attachment; filename="tests.sales-')
    lines = small.content.decode().splitlines()
    assert len(lines) == 3 and all(",paid," in line for line in lines[1:])  # the filter applies
    assert not ReportRun.objects.exists()

    sales("north", 23)
    response = client.post(SALES_FORM, RANGE, follow=True)
    run = ReportRun.objects.get()
    assert response.redirect_chain == [(page_of(run), 302)]
    assert (run.state, run.requester_name, run.tenant) == ("queued", "ann", "north")
    assert "requested: the worker writes it; this page shows its progress" in (
        response.content.decode()
    )


def test_the_request_form_serves_an_ndjson_report(client, clock):
    client.force_login(staff("ann", "north", *VIEWER))
    sales("north", 4)
    response = client.post(f"{REQUEST}?report=tests.sales_ndjson", {**RANGE, "status": "paid"})
    assert response["Content-Type"] == "application/x-ndjson; charset=utf-8"
    rows = [json.loads(line) for line in response.content.decode().splitlines()]
    assert [(row["number"], row["status"]) for row in rows] == [
        ("N00000", "paid"),
        ("N00002", "paid"),
    ]


def test_a_range_over_max_range_is_a_form_error_and_writes_nothing(client, clock):
    client.force_login(staff("ann", "north", *VIEWER))
    sales("north", 30)
    response = client.post(SALES_FORM, {"start": "2026-01-01", "end": "2026-02-28"})
    html = response.content.decode()
    assert response.status_code == 200
    assert _form_codes(response) == ["report-range-too-long"]
    assert "reads at most 31d (its max_range limit)" in html
    assert not ReportRun.objects.exists()
    assert audited() == [("refused", "report-range-too-long")]


def test_the_prefilled_range_is_the_longest_the_limit_takes(client, clock):
    client.force_login(staff("ann", "north", *VIEWER))
    form = client.get(SALES_FORM).context["form"]
    assert (form.initial["start"].isoformat(), form.initial["end"].isoformat()) == (
        "2026-01-30",
        "2026-03-01",
    )
    response = client.post(SALES_FORM, {k: v.isoformat() for k, v in form.initial.items()})
    assert response.status_code == 200 and "report-range" not in response.content.decode()
    assert ReportAudit.objects.get().outcome == "served"


def test_a_report_the_user_may_not_run_is_not_offered_and_is_refused(client, clock):
    client.force_login(staff("dan", "north", *VIEWER, permitted=False))
    sales("north", 30)
    assert "tests.sales" not in client.get(REQUEST).content.decode()
    page = client.get(SALES_FORM).content.decode()
    code = '<code class="litejobs-refusal-code">report-permission-denied</code>'
    assert code in page and "testapp.export_sale" in page
    assert 'id="report-request-form"' not in page
    assert not ReportAudit.objects.exists()  # looking at the page requests nothing
    refused = client.post(SALES_FORM, RANGE).content.decode()
    assert code in refused
    assert not ReportRun.objects.exists()
    assert audited() == [("refused", "report-permission-denied")]


# A run's page ------------------------------------------------------------------------------


def test_a_runs_page_shows_its_progress_and_a_working_download_once_done(client, clock, run_worker):
    client.force_login(staff("ann", "north", *VIEWER))
    sales("north", 23)
    run = queued(client)
    before = client.get(page_of(run)).content.decode()
    assert 'id="report-download"' not in before
    assert '<meta http-equiv="refresh"' in before  # it reloads while it runs
    assert re.search(r"field-progress_shown.*?not started", before, re.S)
    ReportRun.objects.filter(pk=run.pk).update(
        state="running", row_count=500, estimated_rows=20, progress=None
    )
    stale = client.get(page_of(run)).content.decode()
    assert "500 rows so far; estimate unknown (the planner expected ~20, too few)" in stale
    ReportRun.objects.filter(pk=run.pk).update(state="queued", row_count=0, estimated_rows=None)

    run_worker(queues=["reports"])
    run.refresh_from_db()
    assert run.state == "done"
    page = client.get(page_of(run)).content.decode()
    assert re.search(r"field-progress_shown.*?100%", page, re.S)
    assert re.search(r"field-rows_shown.*?>23<", page, re.S)
    size = format_size(run.bytes)
    assert re.search(rf"field-bytes_shown.*?>{re.escape(size)}<", page, re.S)
    assert '<meta http-equiv="refresh"' not in page

    download = client.get(download_href(page))
    assert download.status_code == 200
    assert len(body_of(download).splitlines()) == 24
    listing = client.get(RUNS).content.decode()
    assert re.search(r'<a class="button litejobs-download" href="[^"]+">Download</a>', listing)
    assert size in listing


def test_an_expired_run_offers_no_download(client, clock, run_worker):
    client.force_login(staff("ann", "north", *VIEWER))
    sales("north", 23)
    run = queued(client)
    run_worker(queues=["reports"])
    clock.advance("2h")  # past its lifetime of 1h
    assert 'id="report-download"' not in client.get(page_of(run)).content.decode()
    assert "litejobs-download" not in client.get(RUNS).content.decode()


def test_the_admin_serves_downloads_when_the_urlconf_has_no_litejobs_urls(
    client, clock, run_worker, settings
):
    settings.ROOT_URLCONF = __name__
    client.force_login(staff("ann", "north", *VIEWER))
    sales("north", 23)
    run = queued(client)
    run_worker(queues=["reports"])
    run.refresh_from_db()
    href = download_href(client.get(page_of(run)).content.decode())
    assert href.startswith("/admin/litejobs/reportrun/download/")
    assert run.download_url().startswith("/admin/litejobs/reportrun/download/")
    download = client.get(href)
    assert download.status_code == 200
    assert len(body_of(download).splitlines()) == 24
    client.logout()
    assert client.get(href).status_code == 302  # to the admin's login


# Tenants -----------------------------------------------------------------------------------


def test_another_tenants_staff_sees_nothing_of_a_run(client, clock, run_worker, admin_user):
    ann = staff("ann", "north", *VIEWER, "change_reportrun")
    bob = staff("bob", "south", *VIEWER, "change_reportrun")
    sales("north", 23)
    sales("south", 23)
    client.force_login(ann)
    north = queued(client)
    client.force_login(bob)
    south = queued(client)
    run_worker(queues=["reports"])

    assert listed(client.get(RUNS).content.decode(), "reportrun") == {south.pk}
    assert client.get(page_of(north)).status_code == 404
    cancel = reverse("admin:litejobs_reportrun_cancel", args=[north.pk])
    assert client.post(cancel).status_code == 404
    north.refresh_from_db()
    token = sign_link(DownloadLink(north.pk, north.tenant, clock.now() + timedelta(minutes=5)))
    through_admin = client.get(reverse("admin:litejobs_reportrun_download", args=[token]))
    assert through_admin.status_code in (403, 404)
    assert not ReportAudit.objects.filter(outcome="downloaded").exists()

    client.force_login(ann)
    assert listed(client.get(RUNS).content.decode(), "reportrun") == {north.pk}
    client.force_login(admin_user)  # a superuser sees every run, but reads no tenant's output
    everything = client.get(RUNS).content.decode()
    assert listed(everything, "reportrun") == {north.pk, south.pk}
    assert "litejobs-download" not in everything


def test_the_audit_list_is_scoped_by_tenant_and_filtered(client, clock):
    sales("north", 4)
    sales("south", 4)
    client.force_login(staff("bob", "south", *VIEWER))
    client.post(SALES_FORM, RANGE)
    client.force_login(staff("ann", "north", *VIEWER))
    client.post(SALES_FORM, RANGE)
    north = ReportAudit.objects.get(tenant="north")
    south = ReportAudit.objects.get(tenant="south")
    assert (north.outcome, north.user_name, north.row_count) == ("served", "ann", 4)

    html = client.get(AUDITS).content.decode()
    assert listed(html, "reportaudit") == {north.pk}
    assert "sales reconciliation" in html
    page = reverse("admin:litejobs_reportaudit_change", args=[south.pk])
    assert client.get(page).status_code == 404
    assert listed(client.get(AUDITS, {"outcome": "served"}).content.decode(), "reportaudit") == {
        north.pk
    }
    assert not listed(client.get(AUDITS, {"outcome": "downloaded"}).content.decode(), "reportaudit")
    assert listed(
        client.get(AUDITS, {"report": "tests.sales"}).content.decode(), "reportaudit"
    ) == {north.pk}


# Cancel ------------------------------------------------------------------------------------


def test_a_run_is_cancelled_from_its_page_and_an_ended_one_is_refused(client, clock):
    client.force_login(staff("ann", "north", *VIEWER, "change_reportrun"))
    sales("north", 23)
    run = queued(client)
    assert 'id="report-cancel"' in client.get(page_of(run)).content.decode()
    cancel = reverse("admin:litejobs_reportrun_cancel", args=[run.pk])

    asked = client.post(cancel)  # the button: the reason form first
    assert 'id="reason-form"' in body(asked)
    run.refresh_from_db()
    assert run.state == "queued"
    assert 'id="reason-form"' in body(client.post(cancel, {"apply": "1", "reason": ""}))
    response = client.post(cancel, {"apply": "1", "reason": "wrong month"}, follow=True)
    run.refresh_from_db()
    assert (run.state, run.cancelled_by) == ("cancelled", "ann")
    assert "is cancelled: the worker stops at its next page" in response.content.decode()
    assert 'id="report-cancel"' not in response.content.decode()
    [logged] = OperatorAction.objects.all()
    assert (logged.verb, logged.by, logged.user_id, logged.reason) == (
        "report-cancel",
        "ann",
        run.requester_id,
        "wrong month",
    )
    assert (logged.job_ids, logged.filter) == ([run.job_id], {"run": run.pk, "report": run.report})

    again = client.post(cancel, {"apply": "1", "reason": "again"}, follow=True)
    [told] = again.context["messages"]
    assert told.extra_tags == "report-not-cancellable"
    assert "has ended (cancelled)" in again.content.decode()
    assert OperatorAction.objects.count() == 1  # a refusal is not logged


def test_the_cancel_action_and_who_may_cancel(client, clock):
    sales("north", 23)
    client.force_login(staff("cid", "north", *VIEWER))  # may view, not cancel
    run = queued(client)
    assert 'id="report-cancel"' not in client.get(page_of(run)).content.decode()
    cancel = reverse("admin:litejobs_reportrun_cancel", args=[run.pk])
    assert client.post(cancel).status_code == 403

    client.force_login(staff("ann", "north", *VIEWER, "change_reportrun"))
    selected = {"action": "cancel_runs", "_selected_action": [run.pk]}
    assert 'id="reason-form"' in body(client.post(RUNS, selected))
    client.post(RUNS, {**selected, "apply": "1", "reason": "duplicate request"})
    run.refresh_from_db()
    assert (run.state, run.cancelled_by) == ("cancelled", "ann")
    assert OperatorAction.objects.get().reason == "duplicate request"


# Limits ------------------------------------------------------------------------------------


def limits_form(**values) -> dict[str, str]:
    return {
        "max_range": "31d",
        "max_rows": "100000",
        "max_seconds": "5m",
        "max_concurrent": "2",
        "max_bytes": "50MB",
        "lifetime": "1h",
        "request_budget": "10",
        "reason": "month-end close",
        **values,
    }


def test_every_declared_report_has_a_limits_row_shown_as_people_read_it(client, clock):
    client.force_login(staff("olga", "north", "view_reportlimits"))
    html = client.get(LIMITS).content.decode()
    rows = ReportLimits.objects.order_by("report")
    assert [row.report for row in rows] == ["tests.sales", "tests.sales_ndjson"]
    assert listed(html, "reportlimits") == {row.pk for row in rows}
    sales_row = re.search(r"<tr>.*?tests\.sales<.*?</tr>", html, re.S)
    assert sales_row and "31d" in sales_row.group(0) and "50MB" in sales_row.group(0)
    page = client.get(reverse("admin:litejobs_reportlimits_change", args=[rows[0].pk]))
    assert "max_range 31d" in page.content.decode()  # the declaration's own values
    assert (
        client.post(
            reverse("admin:litejobs_reportlimits_change", args=[rows[0].pk]),
            limits_form(max_range="7d"),
        ).status_code
        == 403
    )
    assert client.get(reverse("admin:litejobs_reportlimits_add")).status_code == 403


def test_an_operator_changes_a_limit_and_the_next_request_keeps_to_it(client, clock):
    olga = staff("olga", "north", *VIEWER, "view_reportlimits", "change_reportlimits")
    client.force_login(olga)
    client.get(LIMITS)
    row = ReportLimits.objects.get(report="tests.sales")
    change = reverse("admin:litejobs_reportlimits_change", args=[row.pk])
    form = client.get(change).content.decode()
    assert 'value="31d"' in form and 'value="50MB"' in form

    refused = client.post(change, limits_form(max_range="soon", max_bytes="lots"))
    assert refused.status_code == 200
    assert "Enter a duration of more than zero, such as 31d" in refused.content.decode()
    assert "max_bytes must be a size such as" in refused.content.decode()
    clock.advance("1m")
    saved = client.post(
        change, limits_form(max_range="7d", max_seconds="1h30m", lifetime="1 00:00:00")
    )
    assert saved.status_code == 302
    row.refresh_from_db()
    assert (row.max_range, row.max_seconds, row.lifetime) == (
        timedelta(days=7),
        timedelta(hours=1, minutes=30),
        timedelta(days=1),
    )
    assert (row.updated_by, row.updated_at) == ("olga", clock.now())

    sales("north", 30)
    response = client.post(SALES_FORM, {"start": "2026-02-01", "end": "2026-02-10"})
    html = response.content.decode()
    assert _form_codes(response) == ["report-range-too-long"] and "reads at most 7d" in html
    assert not ReportRun.objects.exists()


def test_an_operator_changes_max_concurrent_and_the_request_budget_logged_old_to_new(client, clock):
    olga = staff("olga", "north", "view_reportlimits", "change_reportlimits")
    client.force_login(olga)
    client.get(LIMITS)
    row = ReportLimits.objects.get(report="tests.sales")
    change = reverse("admin:litejobs_reportlimits_change", args=[row.pk])
    form = body(client.get(change))
    for name in ("max_concurrent", "request_budget", "reason"):
        assert f'name="{name}"' in form, name  # inputs, not values shown

    without_reason = client.post(change, limits_form(max_concurrent="5", reason=""))
    assert without_reason.status_code == 200 and "This field is required" in body(without_reason)
    too_long = client.post(change, limits_form(max_seconds="2d", lifetime="31d"))
    assert "Enter a duration of at most 1d." in body(too_long)
    assert "Enter a duration of at most 30d." in body(too_long)
    row.refresh_from_db()
    assert (row.max_concurrent, row.request_budget) == (2, 10)
    assert not OperatorAction.objects.exists()

    saved = client.post(
        change, limits_form(max_concurrent="5", request_budget="50", max_seconds="10m")
    )
    assert saved.status_code == 302
    row.refresh_from_db()
    assert (row.max_concurrent, row.request_budget, row.updated_by) == (5, 50, "olga")
    [logged] = OperatorAction.objects.all()
    assert (logged.verb, logged.by, logged.user_id, logged.reason) == (
        "report-limits",
        "olga",
        olga.pk,
        "month-end close",
    )
    assert logged.filter == {"report": "tests.sales"}
    assert logged.change == {
        "max_concurrent": [2, 5],
        "request_budget": [10, 50],
        "max_seconds": ["5m", "10m"],
    }
    assert (
        client.post(
            change, limits_form(max_concurrent="5", request_budget="50", max_seconds="10m")
        ).status_code
        == 302
    )
    assert OperatorAction.objects.count() == 1  # nothing changed, nothing logged

    # The next request keeps to the new budget: 30 rows are answered within the request.
    sales("north", 30)
    client.force_login(staff("ann", "north", *VIEWER))
    answer = client.post(SALES_FORM, RANGE)
    assert answer.status_code == 200 and len(answer.content.decode().splitlines()) == 31
    assert not ReportRun.objects.exists()
