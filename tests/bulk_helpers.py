"""Shared helpers of the bulk money action tests: finance users with TOTP devices, payouts in
the queue, and codes computed from a device's key the way a phone computes them."""

from __future__ import annotations

import time
from decimal import Decimal
from itertools import count

import pytest
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

from litejobs import clock, workqueues
from litejobs.models import WorkItem
from project.payouts.models import Payout
from tests.workqueue_helpers import make_user

_numbers = count(1)

#: The permissions finance holds: the queue's, the action's, and viewing payouts.
FINANCE_PERMS = ("payouts.review_payout", "payouts.release_payout", "payouts.view_payout")
#: A fixed device key (hex), as the demo uses; tests compute codes from it like a phone.
KEY = b"tests-finance-phone!".hex()


def make_device(user, *, key: str = KEY, name: str = "finance phone", confirmed=True):
    """A TOTP device of ``user`` (django-otp's model, as an administrator would add it)."""
    return TOTPDevice.objects.create(user=user, name=name, key=key, confirmed=confirmed)


def make_finance(username: str = "fiona", *, device: bool = True, perms=FINANCE_PERMS):
    """A staff user who may release payouts, with a confirmed TOTP device unless told not."""
    user = make_user(username, *perms)
    if device:
        make_device(user)
    return user


def make_payout(
    amount: str = "100.00",
    currency: str = "EUR",
    *,
    payee: str = "Acme",
    account: str = "DE00 1111 2222 3333 4444 55",
) -> Payout:
    """A pending payout, queued in ``payouts`` (as the app would queue it)."""
    number = next(_numbers)
    payout = Payout.objects.create(
        reference=f"T-PO-{number:05d}",
        payee=payee,
        account=account,
        amount=Decimal(amount),
        currency=currency,
        created_at=clock.now(),
    )
    workqueues.enqueue_item("payouts", payout)
    return payout


def item_of(payout: Payout) -> WorkItem:
    """The payout's live work item in the payouts queue."""
    return WorkItem.objects.get(
        queue="payouts", object_id=str(payout.pk), state__in=("open", "claimed")
    )


def _step(device: TOTPDevice) -> int:
    return (int(time.time()) - device.t0) // device.step


def code_at(device: TOTPDevice, step: int) -> str:
    """The code a phone shows for ``device`` at time step ``step``, zero-padded."""
    totp = TOTP(device.bin_key, device.step, device.t0, device.digits, 0)
    totp.time = device.t0 + step * device.step
    return f"{totp.token():0{device.digits}d}"


def fresh_code(device: TOTPDevice) -> str:
    """A code the device accepts now: the current step's, or the next one if the current was
    used already (django-otp accepts one step either side, each step once)."""
    device.refresh_from_db()
    return code_at(device, max(_step(device) + device.drift, device.last_t + 1))


def expired_code(device: TOTPDevice) -> str:
    """The code the phone showed five steps (2.5 minutes) ago."""
    return code_at(device, _step(device) - 5)


def wrong_code(device: TOTPDevice) -> str:
    """Six digits no nearby step of the device produces."""
    near = {code_at(device, _step(device) + offset) for offset in range(-30, 31)}
    return next(c for c in (f"{d}" * 6 for d in range(10)) if c not in near)


@pytest.fixture
def finance(db):
    """fiona may release payouts and has the finance phone (a confirmed TOTP device)."""
    return make_finance()
