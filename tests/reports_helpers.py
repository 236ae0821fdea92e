"""What the reports' tests share: tenants' users with the export permission, and sales."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

from django.contrib.auth.models import Permission, User

from tests.testapp.models import Member, Sale

START = date(2026, 2, 1)
END = date(2026, 2, 28)
RANGE = {"start": START.isoformat(), "end": END.isoformat()}


def reader(username: str, tenant: str, *, permitted: bool = True) -> User:
    """A staff user of ``tenant``, with the sales export permission unless told."""
    user = User.objects.create_user(username, password="pw", is_staff=True)
    Member.objects.create(user=user, tenant=tenant)
    if permitted:
        user.user_permissions.add(Permission.objects.get(codename="export_sale"))
    return User.objects.get(pk=user.pk)  # permissions are cached per instance


def sales(tenant: str, count: int, **fields) -> list[Sale]:
    """``count`` sales of ``tenant`` in February, one per day cycling."""
    made = [
        Sale(
            tenant=tenant,
            number=f"{tenant[:1].upper()}{n:05d}",
            customer=f"customer {n}",
            amount=Decimal("10.50") + n,
            status="paid" if n % 2 == 0 else "refunded",
            placed=START + timedelta(days=n % 28),
            **fields,
        )
        for n in range(count)
    ]
    return Sale.objects.bulk_create(made)
