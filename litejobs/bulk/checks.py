"""System checks of bulk money actions (registered when litejobs' app is ready)."""

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig, apps
from django.conf import settings as django_settings
from django.core import checks
from django.core.exceptions import FieldDoesNotExist
from django.db.models import Model

from ..core import extras
from ..core.diagnostics import Problem
from ..workqueues import declarations as queues
from .declarations import all_actions
from .devices import TOTP_APP


def _has_attribute(model: type[Model], name: str) -> bool:
    try:
        model._meta.get_field(name)
    except FieldDoesNotExist:  # a property or plain attribute may do
        return hasattr(model, name)
    return True


def problems() -> list[Problem]:
    """What ``manage.py check`` reports (litejobs.E012, E013, E050): an action on an undeclared
    work queue (``bulk-action-invalid``), binding nothing but the amount without a reason
    (``bulk-binding-missing``) or binding a field its queue's model lacks
    (``bulk-binding-invalid``); actions declared without django-otp installed
    (``extra-missing``) or without its TOTP app in ``INSTALLED_APPS`` (``bulk-otp-missing``)."""
    found = []
    declared = {q.name: q for q in queues.all_queues()}
    actions = all_actions()
    for action in actions:
        queue = declared.get(action.queue_name)
        if queue is None:
            found.append(
                Problem(
                    "bulk-action-invalid",
                    f"bulk money action {action.name!r} acts on work queue "
                    f"{action.queue_name!r}, which no installed app declares.",
                    where=action.module,
                )
            )
            continue
        if action.unbound:
            found.append(
                Problem(
                    "bulk-binding-missing",
                    f"bulk money action {action.name!r} binds nothing but the amount, so a "
                    "payee or account changed after the code was typed would be paid. Declare "
                    "bind=(...) with the fields that decide where the money goes (e.g. "
                    "bind=('payee', 'account')), or bind=False with reason='...' when the "
                    "amount alone decides.",
                    where=action.module,
                )
            )
        missing = (
            []
            if callable(action.bind)
            else [name for name in action.bind if not _has_attribute(queue.model, name)]
        )
        if missing:
            found.append(
                Problem(
                    "bulk-binding-invalid",
                    f"bulk money action {action.name!r} binds {', '.join(map(repr, missing))}, "
                    f"which {queue.model._meta.label} has no field or attribute named.",
                    where=action.module,
                )
            )
    if not actions:
        return found
    if not extras.installed("django_otp"):
        error = extras.missing("otp", "django-otp", "Confirming bulk money actions")
        found.append(Problem(error.code, error.args[0], where=actions[0].module))
    elif not (apps.is_installed("django_otp") and apps.is_installed(TOTP_APP)):
        found.append(
            Problem(
                "bulk-otp-missing",
                "bulk money actions are confirmed with a TOTP code: add 'django_otp' and "
                f"'{TOTP_APP}' to INSTALLED_APPS (and migrate).",
                where=actions[0].module,
            )
        )
    return found


#: The check id of each problem (any other is litejobs.E012).
CHECK_IDS = {"extra-missing": "litejobs.E050", "bulk-binding-missing": "litejobs.E013"}
HINTS = {
    "bulk-binding-missing": "Add bind=('payee', 'account') (the row's fields that decide where "
    "the money goes) to bulk_money_action(...), or bind=False, reason='...'.",
    "*": "Declare the work queue in a queues.py (or fix queue=), and install django-otp's TOTP "
    "app: confirmations need a code from a device.",
}


@checks.register("litejobs")
def check_bulk_actions(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> Sequence[checks.CheckMessage]:
    """litejobs.E012: a bulk money action that cannot work — one acting on a work queue no
    installed app declares (``bulk-action-invalid``), binding a field its model lacks, or
    django-otp's TOTP app missing from ``INSTALLED_APPS`` (``bulk-otp-missing``);
    litejobs.E013 (``bulk-binding-missing``): an action that binds nothing but the amount
    without saying why (``bind=False, reason=...``);
    litejobs.E050 (``extra-missing``): django-otp is not installed at all. An invalid
    ``bulk_money_action(...)`` makes its ``queues.py`` fail to import, which litejobs.E010
    reports with the ``[bulk-action-invalid]`` code."""
    return [
        checks.Error(
            f"{problem.where}: [{problem.code}] {problem.message}",
            hint=HINTS.get(problem.code, HINTS["*"]),
            obj=problem.where,
            id=CHECK_IDS.get(problem.code, "litejobs.E012"),
        )
        for problem in problems()
    ]


@checks.register("litejobs")
def check_bulk_device_keys(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> Sequence[checks.CheckMessage]:
    """litejobs.W060: bulk money actions are declared while django-otp's admin still shows a
    device's key and QR code (``OTP_ADMIN_HIDE_SENSITIVE_DATA`` is not True): a stolen admin
    session that can read the key can clone the phone that confirms payments."""
    if not all_actions() or not apps.is_installed("django_otp"):
        return []
    if getattr(django_settings, "OTP_ADMIN_HIDE_SENSITIVE_DATA", False) is True:
        return []
    return [
        checks.Warning(
            "Bulk money actions are confirmed with TOTP codes, but django-otp's admin shows a "
            "device's key and QR code to anyone who may view devices.",
            hint="Set OTP_ADMIN_HIDE_SENSITIVE_DATA = True in your settings, and enrol devices "
            "outside the admin session (or only while adding them).",
            id="litejobs.W060",
        )
    ]
