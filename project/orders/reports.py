"""The demo's reports: a tenant's orders of a month for the monthly reconciliation (run by the
worker, downloaded through a signed link), and a tenant's refunds of a week (small enough to
answer within the request).

Each reads the requesting user's tenant only (``Member``), and needs ``orders.export_order``.
"""

from django.db.models import F

from litejobs import Audit, Limits, Need, Paging, report

from .models import Order

#: The export's columns, in the file's order.
COLUMNS = ["number", "customer", "amount", "currency", "status", "created", "note"]
#: The columns that are not the order's own field names, by the fields they show.
RENAMED = {
    "number": F("pk"),
    "customer": F("customer_email"),
    "amount": F("total"),
    "created": F("created_at"),
}


def orders_of(params, tenant):
    """The tenant's orders placed on a day (UTC) from start to end, both included."""
    return Order.objects.filter(
        tenant=tenant, created_at__date__range=(params["start"], params["end"])
    ).annotate(**RENAMED)


def refunds_of(params, tenant):
    """The tenant's refunded orders placed on a day from start to end."""
    return orders_of(params, tenant).filter(status=Order.Status.REFUNDED)


def member_tenant(user):
    """The tenant the staff user works for (a user without one reads nothing)."""
    return user.member.tenant


export = report(
    "orders.export",
    columns=COLUMNS,
    query=orders_of,
    filters=["status"],
    tenant=member_tenant,
    bom=True,  # spreadsheets then read the file as UTF-8
    limits=Limits(
        max_range="31d",
        max_rows=100_000,
        max_seconds="5m",
        max_concurrent=2,
        max_bytes="50MB",
        lifetime="1h",
    ),
    request_budget=100,
    paging=Paging.pages(size=500),
    audit=Audit(reason="monthly reconciliation", target="orders"),
    permission="orders.export_order",
    need=Need(
        volume=100_000, latency_target="2m", max_result=100_000, operator="finance operations"
    ),
)

refunds = report(
    "orders.refunds",
    columns=COLUMNS,
    query=refunds_of,
    tenant=member_tenant,
    bom=True,
    limits=Limits(
        max_range="7d",
        max_rows=10_000,
        max_seconds="1m",
        max_concurrent=2,
        max_bytes="5MB",
        lifetime="1h",
    ),
    request_budget=100,
    paging=Paging.pages(size=500),
    audit=Audit(reason="refund review", target="orders"),
    permission="orders.export_order",
    need=Need(volume=2_000, latency_target="2s", max_result=100, operator="customer support"),
)
