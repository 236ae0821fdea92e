"""Shared helpers of the work-queue tests: staff users, disputes and queues declared per test."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from itertools import count

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from litejobs import clock
from litejobs.contrib.workqueues import declarations as queues
from project.payments.models import Dispute

_numbers = count(1)


def make_user(username: str, *perms: str, staff: bool = True):
    """A staff user holding ``perms`` (``app_label.codename``)."""
    user = get_user_model().objects.create_user(username, password=username, is_staff=staff)
    for perm in perms:
        app_label, codename = perm.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    return get_user_model().objects.get(pk=user.pk)  # fresh: no stale permission cache


def make_dispute(
    amount: str = "100", *, days: int = 1, evidence: bool = False, currency: str = "EUR"
) -> Dispute:
    """A dispute opened ``days`` ago by the injected clock."""
    number = next(_numbers)
    return Dispute.objects.create(
        reference=f"T-{number:05d}",
        customer_email=f"c{number}@example.com",
        amount=Decimal(amount),
        currency=currency,
        reason="not received",
        opened_at=clock.now() - timedelta(days=days, minutes=number),
        evidence_provided=evidence,
    )


@pytest.fixture
def reviewers(db):
    """alice and bob may work the dispute queue; carol is staff without its permission."""
    return (
        make_user("alice", "payments.review_dispute", "payments.view_dispute"),
        make_user("bob", "payments.review_dispute", "payments.view_dispute"),
        make_user("carol", "payments.view_dispute"),
    )


@pytest.fixture
def declare_queue():
    """Declare work queues over disputes for one test (forgotten afterwards)."""
    names: list[str] = []

    def make(name: str, **options):
        options.setdefault("model", Dispute)
        options.setdefault("permission", "payments.review_dispute")
        queue = queues.work_queue(name, **options)
        names.append(name)
        return queue

    yield make
    for name in names:
        queues.unregister(name)
