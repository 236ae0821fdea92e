"""Helpers of the bulk money action tests: a payout's work item, and the codes of a TOTP device
computed from its key the way a phone computes them."""

from __future__ import annotations

import time

from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

from litejobs.models import WorkItem


def item_of(payout) -> WorkItem:
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
