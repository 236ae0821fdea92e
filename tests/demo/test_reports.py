"""The demo's reports: north exports a month of its orders through the worker and downloads
them (formula-leading notes escaped, a byte order mark first); south is refused north's link;
a range past the limit is refused; a week of refunds is answered within the request."""

from __future__ import annotations

import codecs
import csv
import io
from datetime import date, timedelta

import pytest
from django.contrib.auth import get_user_model

from litejobs.models import Job, ReportAudit, ReportRun
from litejobs.reports import ReportDenied, ReportOutput, ReportParamsInvalid
from litejobs.reports.declarations import RUN_JOB
from project.demo.runner import DemoRunner
from project.orders import reports
from project.orders.models import Order
from project.orders.seed import FORMULA_NOTES, TenantSeed, history_of, seed_tenants

pytestmark = pytest.mark.django_db(transaction=True)

HEADER = b"number,customer,amount,currency,status,created,note\r\n"


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)


@pytest.fixture
def tenants(clock):
    """The seeded history of both tenants and their exporters, at the frozen clock's time."""
    seed_tenants()
    users = get_user_model().objects
    return users.get(username="north"), users.get(username="south")


def days(length: int, end: date) -> dict[str, str]:
    """A range of ``length`` days ending on ``end`` (both its first and last day count)."""
    return {"start": (end - timedelta(days=length - 1)).isoformat(), "end": end.isoformat()}


def orders_within(tenant: str, params: dict[str, str], **fields) -> set[int]:
    found = Order.objects.filter(
        tenant=tenant, created_at__date__range=(params["start"], params["end"]), **fields
    )
    return set(found.values_list("pk", flat=True))


def rows_of(content: bytes) -> dict[int, list[str]]:
    """The CSV's rows by order number (the header checked apart)."""
    rows = list(csv.reader(io.StringIO(content.decode("utf-8-sig"), newline="")))
    return {int(row[0]): row for row in rows[1:]}


def test_north_exports_a_month_through_the_worker_and_south_is_refused_its_link(
    tenants, clock, run_worker, client, caplog
):
    north, south = tenants
    month = days(31, clock.now().date())
    run = reports.export.request(user=north, params=month)
    assert isinstance(run, ReportRun)  # over the request budget: the worker writes it
    assert run_worker(queues=["reports"]) == {"done": 1}
    run.refresh_from_db()
    assert (run.state, run.tenant) == ("done", "north")

    link = run.download_url()
    client.force_login(north)
    response = client.get(link)
    assert response.status_code == 200
    content = b"".join(response.streaming_content)
    assert content.startswith(codecs.BOM_UTF8 + HEADER)
    rows = rows_of(content)
    expected = orders_within("north", month)
    assert len(expected) > 100 and set(rows) == expected  # north's, all of them, nothing else
    for number, note in FORMULA_NOTES.items():
        order = history_of("north").get(customer_email=f"customer{number:03d}@north.example.com")
        assert rows[order.pk][6] == "'" + note  # a spreadsheet shows it, never runs it
    order = Order.objects.get(pk=min(rows))
    number, customer, amount, currency, status, created, _ = rows[order.pk]
    assert [customer, amount, currency, status] == [
        order.customer_email,
        str(order.total),
        order.currency,
        order.status,
    ]
    assert created.startswith(f"{order.created_at:%Y-%m-%d %H:%M:%S}")

    client.force_login(south)
    refused = client.get(link)
    assert refused.status_code == 404
    assert b"customer" not in refused.content
    assert "report-tenant-mismatch" in caplog.text
    downloads = ReportAudit.objects.filter(outcome="downloaded")
    assert list(downloads.values_list("user_name", flat=True)) == ["north"]


def test_a_range_longer_than_31_days_is_refused_and_nothing_is_written(tenants, clock):
    north, _ = tenants
    with pytest.raises(ReportParamsInvalid) as refused:
        reports.export.request(user=north, params=days(32, clock.now().date()))
    assert refused.value.code == "report-range-too-long"
    assert not ReportRun.objects.exists()
    # Nothing but the refusal's own audit row.
    refusal = ReportAudit.objects.get()
    assert (refusal.outcome, refusal.code, refusal.user_name, refusal.tenant) == (
        "refused",
        "report-range-too-long",
        "north",
        "north",
    )
    assert not Job.objects.filter(name=RUN_JOB).exists()


def test_a_week_of_refunds_is_answered_within_the_request_for_each_tenant(tenants, clock):
    week = days(7, clock.now().date())
    found = {}
    for user in tenants:
        answer = reports.refunds.request(user=user, params=week)
        assert isinstance(answer, ReportOutput)
        assert answer.content.startswith(codecs.BOM_UTF8 + HEADER)
        found[user.member.tenant] = set(rows_of(answer.content))
    refunded = Order.Status.REFUNDED
    assert found == {tenant: orders_within(tenant, week, status=refunded) for tenant in found}
    assert found["north"]  # each tenant reads its own refunds only
    assert not Job.objects.filter(name=RUN_JOB).exists()
    assert list(ReportAudit.objects.values_list("outcome", flat=True)) == ["served", "served"]


def test_a_user_of_no_tenant_reads_nothing(tenants, clock):
    admin = get_user_model().objects.create_superuser("root", password="root")
    with pytest.raises(ReportDenied) as denied:
        reports.export.request(user=admin, params=days(7, clock.now().date()))
    assert denied.value.code == "report-tenant-unknown"


def test_the_banner_says_how_to_request_watch_and_download_a_report():
    out = io.StringIO()
    runner = DemoRunner(port=8123, out=out)
    runner.say_tenants(TenantSeed())  # a restart seeds nothing and says nothing
    assert out.getvalue() == ""
    runner.say_tenants(TenantSeed(orders_created={"north": 600, "south": 60}))
    runner.announce_reports()
    text = out.getvalue()
    assert "Seeded 600 north and 60 south past orders for the reports" in text
    assert "Reports: http://127.0.0.1:8123/admin/  (north/north: litejobs → Report runs" in text
    assert "Request a report → orders.export, watch it run, download it" in text
    assert "south/south opens north's download link and is refused" in text
