"""The payouts queue's demo data: a few hundred pending payouts and the finance user who
releases them with a TOTP code.

Called by ``project.demo.seed.seed_demo_data`` inside its transaction; idempotent. The finance
user's TOTP device has a **fixed key** so the secret ``make demo`` prints stays the same from
run to run: add it to an authenticator app once (or compute codes from it), and it keeps
working. Never do this outside a demo.
"""

from __future__ import annotations

import random
from base64 import b32encode
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django_otp.plugins.otp_totp.models import TOTPDevice

from litejobs import clock
from litejobs.workqueues import enqueue_item
from project.demo.staff import ensure_group, ensure_staff

from .models import Payout

FINANCE_GROUP = "Finance"
FINANCE_USERNAME = "finance"
FINANCE_PASSWORD = "finance"  # noqa: S105 - the demo's printed login
FINANCE_DEVICE_NAME = "finance phone"
#: The demo device's key (hex of 20 bytes): stable, so the printed secret is stable.
FINANCE_TOTP_KEY = b"litejobs-demo-phone!".hex()
PAYOUT_COUNT = 240
CURRENCIES = ("EUR", "EUR", "USD")
#: The demo's sellers and the (made-up) bank accounts their payouts go to.
PAYEES = (
    ("Atelier Nord", "DE00 5001 0517 0000 0000 01"),
    ("Blue Finch Books", "DE00 5001 0517 0000 0000 02"),
    ("Casa Verde", "DE00 5001 0517 0000 0000 03"),
    ("Delta Ceramics", "DE00 5001 0517 0000 0000 04"),
    ("Eastwood Prints", "DE00 5001 0517 0000 0000 05"),
    ("Fjord Outdoor", "DE00 5001 0517 0000 0000 06"),
    ("Granite & Oak", "DE00 5001 0517 0000 0000 07"),
    ("Harbor Tea Co.", "DE00 5001 0517 0000 0000 08"),
    ("Indigo Textiles", "DE00 5001 0517 0000 0000 09"),
    ("Juniper Labs", "DE00 5001 0517 0000 0000 10"),
)
#: What finance may do: see and work the payouts queue, release payouts and read the audit.
#: Not their TOTP device: a session that can read the device's key can clone the phone.
FINANCE_PERMISSIONS = (
    ("payouts", "review_payout"),
    ("payouts", "release_payout"),
    ("payouts", "view_payout"),
    ("litejobs", "view_bulkaction"),
    ("litejobs", "view_bulkconfirmationattempt"),
)


@dataclass
class PayoutSeed:
    """What seeding the payouts changed, and the device whose secret the demo prints."""

    finance_created: bool = False
    payouts_created: int = 0
    device: TOTPDevice | None = None

    @property
    def secret(self) -> str:
        """The device's key in base32, as authenticator apps take it."""
        return b32encode(self.device.bin_key).decode() if self.device else ""


def seed_payouts(count: int = PAYOUT_COUNT, *, seed: int = 7) -> PayoutSeed:
    """Create the finance user and device, and ``count`` payouts in the queue unless any exist."""
    report = PayoutSeed()
    user, report.finance_created = _ensure_finance()
    report.device = _ensure_device(user)
    if Payout.objects.exists():
        return report
    chance = random.Random(seed)  # noqa: S311 - demo data, reproducible on purpose
    now = clock.now()
    for number in range(1, count + 1):
        payee, account = chance.choice(PAYEES)
        payout = Payout.objects.create(
            reference=f"PO-{number:04d}",
            payee=payee,
            account=account,
            amount=Decimal(round(10 ** chance.uniform(1.5, 3.6), 2)).quantize(Decimal("0.01")),
            currency=chance.choice(CURRENCIES),
            created_at=now - timedelta(minutes=chance.randrange(10, 14 * 24 * 60)),
        )
        enqueue_item("payouts", payout)
    report.payouts_created = count
    return report


def _ensure_finance():
    group = ensure_group(FINANCE_GROUP, FINANCE_PERMISSIONS)
    return ensure_staff(FINANCE_USERNAME, FINANCE_PASSWORD, group=group)


def _ensure_device(user) -> TOTPDevice:
    device = TOTPDevice.objects.filter(user=user, name=FINANCE_DEVICE_NAME).first()
    if device is None:
        device = TOTPDevice(user=user, name=FINANCE_DEVICE_NAME)
    if device.key != FINANCE_TOTP_KEY or not device.confirmed:
        device.key = FINANCE_TOTP_KEY
        device.confirmed = True
        device.save()
    return device
