"""Who may run a bulk money action, and the phones that confirm it (django-otp TOTP devices).

django-otp is imported only here, and only when a device is read or a code verified: a
project declares bulk money actions without it (``manage.py check`` then reports the missing
extra, ``litejobs[otp]``), but none can be confirmed.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.apps import apps

from ..core import extras
from ..exceptions import InvalidInput, LitejobsError
from ..workqueues.errors import WorkQueueForbidden
from .declarations import BulkMoneyAction, database_alias
from .errors import BulkRefused

logger = logging.getLogger(__name__)

#: The django-otp app that holds TOTP devices.
TOTP_APP = "django_otp.plugins.otp_totp"
#: Time steps either side of now within which a refused code is called expired, not wrong.
EXPIRED_WINDOW = 20


def check_user(action: BulkMoneyAction, user: Any) -> None:
    """Refuse a user who may not run ``action``: ``user-missing``, ``work-queue-forbidden``
    (the queue's permission), ``bulk-forbidden`` (the action's permission)."""
    if user is None or getattr(user, "pk", None) is None:
        raise InvalidInput(
            "Say who acts: pass the signed-in user (the admin passes it).", code="user-missing"
        )
    queue = action.queue()
    if not queue.allows(user):
        logger.info("bulk forbidden queue=%s user=%s", queue.name, username(user))
        raise WorkQueueForbidden(
            f"You may not work queue {queue.name!r}: it needs the permission "
            f"{queue.permission!r}. Ask an administrator to grant it (directly or via a group)."
        )
    if not user.has_perm(action.permission):
        logger.info("bulk forbidden action=%s user=%s", action.name, username(user))
        raise BulkRefused(
            f"You may not run {action.label!r} ({action.name}): it needs the permission "
            f"{action.permission!r}. Ask an administrator to grant it (directly or via a group).",
            code="bulk-forbidden",
        )


def username(user: Any) -> str:
    """How records and logs name ``user``."""
    name = user.get_username() if hasattr(user, "get_username") else ""
    return (name or f"user:{getattr(user, 'pk', '?')}")[:150]


def _totp_model() -> Any:  # django_otp's TOTPDevice (django-otp ships no types)
    extras.require("otp", "django_otp", "Confirming a bulk money action")
    if not (apps.is_installed("django_otp") and apps.is_installed(TOTP_APP)):
        raise BulkRefused(
            "Bulk money actions need django-otp's TOTP devices: add 'django_otp' and "
            f"'{TOTP_APP}' to INSTALLED_APPS and migrate.",
            code="bulk-otp-missing",
        )
    from django_otp.plugins.otp_totp.models import TOTPDevice

    return TOTPDevice


def devices_for(user: Any) -> list[Any]:
    """The user's confirmed TOTP devices (their phones), oldest first."""
    if user is None or getattr(user, "pk", None) is None:
        return []
    model = _totp_model()
    return list(
        model.objects.using(database_alias()).filter(user=user, confirmed=True).order_by("pk")
    )


NO_DEVICE_HELP = (
    "Bulk money actions are confirmed with a code from your phone, and you have no confirmed "
    "TOTP device. Ask an administrator to add one for you (admin > TOTP devices > Add: your "
    "user, 'Confirmed' ticked), then scan its QR code with an authenticator app on your phone."
)


def device_of(user: Any, device_id: Any = None) -> Any:
    """The confirmed device of ``user`` a confirmation uses (``device_id``, else the first)."""
    devices = devices_for(user)
    if not devices:
        raise BulkRefused(NO_DEVICE_HELP, code="bulk-device-missing")
    if device_id in (None, ""):
        return devices[0]
    for device in devices:
        if device.persistent_id == device_id or str(device.pk) == str(device_id):
            return device
    raise BulkRefused(
        "That device is not one of your confirmed TOTP devices; pick one of yours.",
        code="bulk-device-missing",
    )


def unavailable_reason(action: BulkMoneyAction, user: Any) -> str:
    """Why ``user`` cannot start ``action`` now (empty when they can): the queue page shows it
    beside the action instead of a button."""
    try:
        check_user(action, user)
        device_of(user)
    except LitejobsError as error:
        reason: str = error.args[0]
        return reason
    return ""


def verify(device: Any, code: Any) -> tuple[str, datetime | None]:
    """Verify a code with django-otp; answers ``confirmed`` or the refusal's code."""
    from django_otp.oath import TOTP  # litejobs[otp]

    typed = "".join(str(code or "").split())
    if not typed:
        return "bulk-code-missing", None
    allowed, details = device.verify_is_allowed()
    if not allowed:
        return "bulk-code-throttled", (details or {}).get("locked_until")
    if device.verify_token(typed):  # single-use (last_t), counts failures (throttling)
        return "confirmed", None
    if typed.isdigit() and len(typed) == device.digits:
        token = int(typed)
        probe = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
        if probe.verify(token, device.tolerance):  # right for now, but at or before last_t
            return "bulk-code-reused", None
        if probe.verify(token, EXPIRED_WINDOW):
            return "bulk-code-expired", None
    return "bulk-code-invalid", None
