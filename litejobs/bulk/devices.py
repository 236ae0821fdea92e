"""Who may run a bulk money action, and the phones that confirm it (django-otp TOTP devices).

django-otp is imported only here, and only when a device is read or a code verified: a
project declares bulk money actions without it (``manage.py check`` then reports the missing
extra, ``litejobs[otp]``), but none can be confirmed.
"""

from __future__ import annotations

import logging
import math
from datetime import datetime
from typing import Any

from django.apps import apps
from django.utils import timezone

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


def confirming_device(action: BulkMoneyAction, user: Any, device_id: Any = None) -> Any:
    """The device ``user`` confirms ``action`` with (``device_of``), once they may run it
    (``check_user``) and it binds what decides where the money goes (``check_binding``)."""
    check_user(action, user)
    action.check_binding()
    return device_of(user, device_id)


def unavailable_reason(action: BulkMoneyAction, user: Any) -> str:
    """Why ``user`` cannot start ``action`` now (empty when they can): the queue page shows it
    beside the action instead of a button."""
    try:
        confirming_device(action, user)
    except LitejobsError as error:
        reason: str = error.args[0]
        return reason
    return ""


def wait_seconds(device: Any) -> int:
    """Whole seconds until django-otp's throttling lets ``device`` verify a code again (0: it
    may now). Read from django-otp's own ``locked_until``, against django-otp's own clock (the
    wall clock it stamped the failure with, not an injected one)."""
    allowed, details = device.verify_is_allowed()
    if allowed:
        return 0
    until: datetime | None = (details or {}).get("locked_until")
    if until is None:
        return 1
    return max(1, math.ceil((until - timezone.now()).total_seconds()))


def wait_text(seconds: int) -> str:
    """``1 second``, ``23 seconds``, ``2 minutes 8 seconds``: a throttling wait in words."""
    minutes, rest = divmod(max(seconds, 1), 60)
    parts = [f"{minutes} minute{'s' if minutes != 1 else ''}"] if minutes else []
    if rest or not parts:
        parts.append(f"{rest} second{'s' if rest != 1 else ''}")
    return " ".join(parts)


def verify(device: Any, code: Any) -> tuple[str, int]:
    """Verify a code with django-otp; answers ``confirmed`` or the refusal's code, and for a
    throttled device the seconds left to wait."""
    from django_otp.oath import TOTP  # litejobs[otp]

    typed = "".join(str(code or "").split())
    if not typed:
        return "bulk-code-missing", 0
    wait = wait_seconds(device)
    if wait:
        return "bulk-code-throttled", wait
    if device.verify_token(typed):  # single-use (last_t), counts failures (throttling)
        return "confirmed", 0
    if typed.isdigit() and len(typed) == device.digits:
        token = int(typed)
        probe = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
        if probe.verify(token, device.tolerance):  # right for now, but at or before last_t
            return "bulk-code-reused", 0
        if probe.verify(token, EXPIRED_WINDOW):
            return "bulk-code-expired", 0
    return "bulk-code-invalid", 0
