"""The reports' demo data: the order history of the two tenants, north and south, and a staff
user of each who may export their own tenant's orders.

Called by ``project.demo.seed.seed_demo_data`` inside its transaction; idempotent: the
exporters get their printed passwords and permissions back, and a tenant's history is created
only when none of it exists. History orders are past orders whose receipts went out long ago:
they are written directly, with no receipt job and no ``orders.paid`` event. A few notes
start with ``=``, ``+`` or ``@``: the CSV export escapes them, so a spreadsheet shows them as
text instead of running them as formulas.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal

from litejobs import clock
from project.demo.staff import ensure_group, ensure_staff

from .models import Member, Order, Tenant

#: How many past orders each tenant gets, spread over the last ``HISTORY_DAYS`` days.
HISTORY = {Tenant.NORTH: 600, Tenant.SOUTH: 60}
HISTORY_DAYS = 60
#: The newest history order is this much older than the seeding: fresh orders list first.
HISTORY_LEAD = timedelta(hours=1)
#: Staff who export their tenant's orders and follow their report runs, nothing else (not
#: the orders' admin pages, which show every tenant's orders).
EXPORTERS_GROUP = "Order exporters"
EXPORTER_PERMISSIONS = (
    ("orders", "export_order"),
    ("litejobs", "view_reportrun"),
    ("litejobs", "view_reportaudit"),
    ("litejobs", "view_reportlimits"),
)
STATUSES = (Order.Status.PAID, Order.Status.REFUNDED, Order.Status.PENDING)
STATUS_WEIGHTS = (80, 12, 8)
CURRENCIES = ("EUR", "EUR", "EUR", "USD", "GBP")
NOTES = ("", "", "", "", "", "gift wrap", "leave with a neighbour", "invoice to the company")
#: Notes a spreadsheet would run as formulas, on the newest orders so every recent range
#: shows them escaped.
FORMULA_NOTES = {
    2: '=HYPERLINK("https://example.com/refund","Click for a refund")',
    5: "+49 30 1234567 call before delivery",
    9: "@warehouse: hold until Monday",
}


@dataclass(frozen=True)
class Exporter:
    """A tenant's staff login that exports its orders."""

    username: str
    password: str
    tenant: Tenant

    def __str__(self) -> str:
        return f"{self.username}/{self.password}"


#: The logins ``make demo`` prints for the reports, one per tenant.
EXPORTERS = (
    Exporter("north", "north", Tenant.NORTH),
    Exporter("south", "south", Tenant.SOUTH),
)


@dataclass
class TenantSeed:
    """What seeding the tenants changed."""

    exporters_created: list[str] = field(default_factory=list)
    #: History orders created, by tenant.
    orders_created: dict[str, int] = field(default_factory=dict)


def seed_tenants(*, seed: int = 11) -> TenantSeed:
    """Create the exporters and their memberships, and each tenant's history unless it has
    one."""
    report = TenantSeed()
    group = ensure_group(EXPORTERS_GROUP, EXPORTER_PERMISSIONS)
    for exporter in EXPORTERS:
        user, created = ensure_staff(exporter.username, exporter.password, group=group)
        Member.objects.update_or_create(user=user, defaults={"tenant": exporter.tenant})
        if created:
            report.exporters_created.append(exporter.username)
    for tenant, count in HISTORY.items():
        if not history_of(tenant).exists():
            chance = random.Random(f"{tenant}:{seed}")  # noqa: S311 - demo data, reproducible
            Order.objects.bulk_create(_history(tenant, count, chance))
            report.orders_created[tenant] = count
    return report


def history_of(tenant: str):
    """The tenant's seeded history (its customers' addresses are the tenant's own domain)."""
    return Order.objects.filter(tenant=tenant, customer_email__endswith=f"@{tenant}.example.com")


def _history(tenant: str, count: int, chance: random.Random) -> list[Order]:
    """``count`` past orders of ``tenant``, newest first, one every ``HISTORY_DAYS / count``."""
    step = timedelta(days=HISTORY_DAYS) / count
    newest = clock.now() - HISTORY_LEAD
    orders = []
    for number in range(count):
        created = (newest - step * number - step * chance.random()).replace(microsecond=0)
        orders.append(
            Order(
                tenant=tenant,
                customer_email=f"customer{number:03d}@{tenant}.example.com",
                total=Decimal(round(10 ** chance.uniform(0.8, 3.0), 2)).quantize(Decimal("0.01")),
                currency=chance.choice(CURRENCIES),
                status=chance.choices(STATUSES, weights=STATUS_WEIGHTS)[0],
                note=FORMULA_NOTES.get(number) or chance.choice(NOTES),
                created_at=created,
                receipt_sent_at=created + timedelta(minutes=1),
            )
        )
    return orders
