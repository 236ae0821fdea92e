"""The dispute queue's demo data: a few hundred disputes and the two reviewers who clear it.

Called by ``project.demo.seed.seed_demo_data`` inside its transaction; idempotent: reviewers
get their printed passwords back, disputes are created only once. Each dispute is put in the
queue with ``litejobs.workqueues.enqueue_item``, exactly as the app would when one is opened.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal

from django.contrib.auth.models import Group, Permission

from litejobs import clock
from litejobs.workqueues import enqueue_item
from project.demo.staff import ensure_staff

from .models import Dispute

#: The staff who review disputes (they may see and work the queue, nothing else).
REVIEWERS_GROUP = "Dispute reviewers"
DISPUTE_COUNT = 300
REASONS = ("not received", "not as described", "duplicate charge", "fraudulent", "cancelled")
CURRENCIES = ("EUR", "EUR", "EUR", "USD", "GBP")


@dataclass(frozen=True)
class Reviewer:
    username: str
    password: str

    def __str__(self) -> str:
        return f"{self.username}/{self.password}"


#: The logins ``make demo`` prints for the dispute queue.
REVIEWERS = (Reviewer("alice", "alice"), Reviewer("bob", "bob"))


@dataclass
class DisputeSeed:
    """What seeding the disputes changed."""

    reviewers_created: list[str] = field(default_factory=list)
    disputes_created: int = 0


def seed_disputes(count: int = DISPUTE_COUNT, *, seed: int = 5) -> DisputeSeed:
    """Create the reviewers, and ``count`` disputes in the queue unless disputes exist."""
    report = DisputeSeed()
    group = _reviewers_group()
    for reviewer in REVIEWERS:
        if ensure_staff(reviewer.username, reviewer.password, group=group)[1]:
            report.reviewers_created.append(reviewer.username)
    if Dispute.objects.exists():
        return report
    chance = random.Random(seed)  # noqa: S311 - demo data, reproducible on purpose
    now = clock.now()
    for number in range(1, count + 1):
        dispute = Dispute.objects.create(
            reference=f"DSP-{number:04d}",
            customer_email=f"customer{number}@example.com",
            amount=Decimal(round(10 ** chance.uniform(1.3, 3.5), 2)).quantize(Decimal("0.01")),
            currency=chance.choice(CURRENCIES),
            reason=chance.choice(REASONS),
            opened_at=now - timedelta(minutes=chance.randrange(10, 30 * 24 * 60)),
            evidence_provided=chance.random() < 0.5,
        )
        enqueue_item("disputes", dispute)
    report.disputes_created = count
    return report


def _reviewers_group() -> Group:
    group, _ = Group.objects.get_or_create(name=REVIEWERS_GROUP)
    group.permissions.set(
        Permission.objects.filter(
            content_type__app_label="payments", codename__in=("review_dispute", "view_dispute")
        )
    )
    return group
