"""The reports of the test suite: a tenant's sales over a date range, filtered by status and
customer (one worker-run export, CSV), and the same rows as NDJSON."""

from litejobs import Audit, Limits, Need, Paging, report

from .models import Sale

COLUMNS = ["number", "customer", "amount", "status", "note", "formula", "placed"]


def sales_query(params, tenant):
    """A tenant's sales placed within the range."""
    return Sale.objects.filter(tenant=tenant, placed__range=(params["start"], params["end"]))


def member_tenant(user):
    """The tenant the user works for."""
    return user.member.tenant


sales = report(
    "tests.sales",
    columns=COLUMNS,
    query=sales_query,
    filters=["status", "customer"],
    tenant=member_tenant,
    limits=Limits(
        max_range="31d",
        max_rows=100_000,
        max_seconds="5m",
        max_concurrent=2,
        max_bytes="50MB",
        lifetime="1h",
    ),
    request_budget=10,
    paging=Paging.pages(size=5),
    audit=Audit(reason="sales reconciliation", target="sales"),
    permission="testapp.export_sale",
    formula_columns=("formula",),
    need=Need(volume=100_000, latency_target="1m", max_result=100_000, operator="test ops"),
)

sales_ndjson = report(
    "tests.sales_ndjson",
    columns=COLUMNS,
    query=sales_query,
    filters=["status"],
    tenant=member_tenant,
    format="ndjson",
    limits=Limits(max_range="31d"),
    request_budget=10,
    paging=Paging.pages(size=5),
    audit=Audit(reason="sales reconciliation", target="sales"),
    permission="testapp.export_sale",
    need=Need(volume=100_000, latency_target="1m", max_result=100_000, operator="test ops"),
)
