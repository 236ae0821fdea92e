"""The reports how-to's opening example runs as written: its declaration, then its request,
answered within the report's own limits (its range is no longer than its ``max_range``)."""

from __future__ import annotations

import re
from datetime import date, timedelta
from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.contrib.auth.models import User
from django.db.models import F, Value

from litejobs.reports import ReportOutput
from litejobs.reports.declarations import reports as registry
from tests.conftest import ROOT
from tests.testapp.models import Member, Sale

pytestmark = pytest.mark.django_db(transaction=True)

HOW_TO = ROOT / "docs" / "how-to" / "reports.md"


def examples() -> list[str]:
    """The page's Python blocks, in order."""
    return re.findall(r"```python\n(.*?)```", HOW_TO.read_text(encoding="utf-8"), re.S)


def orders() -> SimpleNamespace:
    """The example's ``Order``: the test app's sales, under the example's field names."""
    rows = Sale.objects.annotate(customer_email=F("customer"), currency=Value("EUR"))
    return SimpleNamespace(objects=rows)


def test_the_how_tos_example_declares_and_requests_as_written(clock):
    declaring, requesting = examples()[:2]
    assert "from .models import Order\n" in declaring  # the one line a test stands in for
    namespace = {"Order": orders()}
    exec(declaring.replace("from .models import Order\n", ""), namespace)  # noqa: S102
    try:
        march = date(2026, 3, 1)
        Sale.objects.bulk_create(
            Sale(
                tenant="acme",
                number=f"A{day:05d}",
                customer=f"customer{day}@example.com",
                amount=Decimal("10.50"),
                status="refunded" if day % 2 else "paid",
                placed=march + timedelta(days=day),
            )
            for day in range(31)  # every day of March, the last one included
        )
        user = User.objects.create_superuser("ann", password="pw")
        Member.objects.create(user=user, tenant="acme")
        scope = {**namespace, "request": SimpleNamespace(user=user)}
        exec(requesting, scope)  # noqa: S102
    finally:
        registry.unregister("shop.orders")
    answer = scope["answer"]
    assert isinstance(answer, ReportOutput)
    lines = answer.content.decode().splitlines()
    assert lines[0] == "number,customer_email,amount,currency,status,placed"
    assert len(lines) == 1 + 16 and lines[-1].endswith(",EUR,paid,2026-03-31")
