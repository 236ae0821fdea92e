"""The demo's data: two logins, a few orders, the disputes, the payouts, the vendor catalog and
the two tenants' order history for the reports, loaded idempotently on every ``make demo``.

Orders come from ``fixtures/demo_orders.json`` but are placed through
``project.orders.services.place_order`` rather than ``loaddata``: a fixture row would skip the
enqueue, and the point of the demo is that each order's receipt job commits with it.
Users are created in code because their passwords must be hashed by the configured hasher.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from django.contrib.auth.models import Group, Permission
from django.db import transaction

from project.catalog.seed import CatalogSeed, seed_catalog
from project.database import BASE_DIR
from project.orders.models import Order
from project.orders.seed import TenantSeed, seed_tenants
from project.orders.services import place_order, start_checkout
from project.payments.seed import DisputeSeed, seed_disputes
from project.payouts.seed import PayoutSeed, seed_payouts

from .staff import ensure_staff

ORDERS_FIXTURE = BASE_DIR / "fixtures" / "demo_orders.json"
#: Staff who operate litejobs from the admin; they may look at everything and change nothing.
OPERATORS_GROUP = "Operators"
#: The apps whose models operators may view.
OPERATED_APPS = ("litejobs", "orders", "catalog")


@dataclass(frozen=True)
class DemoLogin:
    username: str
    password: str
    superuser: bool

    def __str__(self) -> str:
        return f"{self.username}/{self.password}"


#: The logins ``make demo`` prints; a superuser, and an operator with view permissions only.
LOGINS = (
    DemoLogin("admin", "admin", superuser=True),
    DemoLogin("ops", "ops", superuser=False),
)


@dataclass
class SeedReport:
    """What one seeding run changed, so the demo can say it."""

    users_created: list[str] = field(default_factory=list)
    orders_placed: list[int] = field(default_factory=list)
    checkouts_started: list[int] = field(default_factory=list)
    disputes: DisputeSeed = field(default_factory=DisputeSeed)
    payouts: PayoutSeed = field(default_factory=PayoutSeed)
    catalog: CatalogSeed = field(default_factory=CatalogSeed)
    tenants: TenantSeed = field(default_factory=TenantSeed)


#: Two checkouts whose sagas run at start: one ships, one is compensated (the carrier refuses).
DEMO_CHECKOUTS = (
    {
        "customer_email": "ada@example.com",
        "address": "12 Analytical Row, London",
        "total": Decimal("42.00"),
    },
    {"customer_email": "grace@example.com", "address": "1 Nowhere Lane", "total": Decimal("17.50")},
)


def load_order_fixture(path: Path = ORDERS_FIXTURE) -> list[dict]:
    """The demo orders, with totals as ``Decimal`` (JSON holds them as strings, exactly)."""
    rows = json.loads(path.read_text())
    return [{**row, "total": Decimal(row["total"])} for row in rows]


def seed_demo_data(orders_fixture: Path = ORDERS_FIXTURE) -> SeedReport:
    """Create the demo logins and orders unless they exist; safe to run any number of times.

    One transaction: an interrupted first run leaves nothing half-seeded for the next one to
    mistake for done.
    """
    report = SeedReport()
    with transaction.atomic():
        operators = _operators_group()
        for login in LOGINS:
            group = None if login.superuser else operators
            _, created = ensure_staff(
                login.username, login.password, superuser=login.superuser, group=group
            )
            if created:
                report.users_created.append(login.username)
        orders = load_order_fixture(orders_fixture)
        emails = [row["customer_email"] for row in orders]
        if not Order.objects.filter(customer_email__in=emails).exists():
            report.orders_placed = [place_order(**row).pk for row in orders]
            report.checkouts_started = [start_checkout(**row).pk for row in DEMO_CHECKOUTS]
        report.disputes = seed_disputes()  # the dispute work queue and its two reviewers
        report.payouts = seed_payouts()  # the payouts queue, finance and its TOTP device
        report.catalog = seed_catalog()  # the vendor's CSV in the media storage, imported once
        report.tenants = seed_tenants()  # north's and south's order history and exporters
    return report


def _operators_group() -> Group:
    """The operators' group, granted every view permission of the operated apps.

    Re-granted on each run so models added to litejobs since the last run are covered.
    """
    group, _ = Group.objects.get_or_create(name=OPERATORS_GROUP)
    group.permissions.set(
        Permission.objects.filter(
            content_type__app_label__in=OPERATED_APPS, codename__startswith="view_"
        )
    )
    return group
