"""The confirmation: a TOTP code from the acting user's phone, bound to the preview's digest.

Under a row lock on the device, the set is read again (anything changed refuses the
confirmation with a fresh preview), the code is verified by django-otp (single-use,
throttled), and a verified confirmation writes the ``BulkAction`` record and enqueues one job
per item, in one transaction. Every attempt, right or wrong, is audited.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from ..core import clock
from ..core.enums import BulkItemState
from ..exceptions import InvalidInput, LitejobsError
from ..models import (
    UNFINISHED_ITEM_CONSTRAINT,
    BulkAction,
    BulkActionItem,
    BulkConfirmationAttempt,
)
from . import devices
from .declarations import BulkMoneyAction, database_alias, get_action
from .errors import BulkRefused, BulkSetChanged
from .execution import run_bulk_item, violates
from .preview import Preview, read, read_token

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Confirmation:
    """A confirmed action: its record, and whether this call wrote it (``False``: a double
    submit of the same preview, answered with the record the first submit wrote)."""

    bulk_action: BulkAction
    created: bool


_CODE_MESSAGES = {
    "bulk-code-missing": "Type the {digits}-digit code your authenticator app shows for "
    "{device}: nothing moved.",
    "bulk-code-invalid": "Wrong code: it is not the one {device} shows, and nothing moved. "
    "Type the current {digits}-digit code (each wrong code makes the next try wait longer).",
    "bulk-code-expired": "That code has expired (or {device}'s clock is off): nothing moved. "
    "Type the code the app shows now.",
    "bulk-code-reused": "That code was already used: each code confirms once. Wait for the next "
    "code on {device} and type it: nothing moved.",
    "bulk-code-throttled": "After a wrong code, {device} takes the next one only in {wait}: "
    "type the code the app shows then (each wrong code doubles the wait). Nothing moved.",
}


def confirm(
    token: Any,
    code: Any,
    user: Any,
    *,
    device: Any = None,
    remote_addr: str | None = None,
) -> Confirmation:
    """Confirm a preview with a TOTP code from ``user``'s device; answers the ``BulkAction``.

    Refused (``BulkRefused``), with nothing moved: a token that is not this user's preview or
    is too old; a user who may no longer run the action or has no device; an action that
    binds nothing (``bulk-binding-missing``); a missing, wrong,
    expired or already used code, or one typed while django-otp's throttling makes the device
    wait (every wrong code counts, and the wait doubles). ``BulkSetChanged`` (carrying a fresh
    preview) when the items read now do not match the previewed digest. Every attempt is
    audited. A second submit of a confirmed preview answers the same record and enqueues
    nothing.
    """
    data, audit = _read_token(token, user, remote_addr)
    action, chosen = _action_and_device(data, user, device, audit)
    with transaction.atomic(using=database_alias()):
        outcome = _confirm_locked(action, data, code, user, chosen, audit)
    if isinstance(outcome, LitejobsError):  # the audit row and django-otp's throttling state
        raise outcome  # are committed
    if outcome.created:
        record = outcome.bulk_action
        logger.info(
            "bulk confirmed id=%s action=%s items=%s user=%s device=%s",
            record.pk,
            action.name,
            record.item_count,
            record.username,
            record.device,
        )
    return outcome


def _read_token(token: Any, user: Any, remote_addr: str | None) -> tuple[dict[str, Any], _Audit]:
    """The preview's signed data, and the audit of this attempt."""
    try:
        data = read_token(token, user)
    except BulkRefused as error:  # audited too: a forged or stale form is worth knowing about
        _Audit(user, "", None, remote_addr).write(error.code)
        raise
    return data, _Audit(user, str(data["a"]), data["n"], remote_addr)


def _action_and_device(
    data: dict[str, Any], user: Any, device: Any, audit: _Audit
) -> tuple[BulkMoneyAction, Any]:
    """The previewed action, which the user must still be allowed to run and which must bind
    what decides where the money goes, and their device."""
    try:
        action = get_action(data["a"])
        chosen = devices.confirming_device(action, user, device)
    except LitejobsError as error:
        audit.write(error.code)
        raise
    audit.device = chosen
    return action, chosen


def _confirm_locked(
    action: BulkMoneyAction,
    data: dict[str, Any],
    code: Any,
    user: Any,
    device: Any,
    audit: _Audit,
) -> Confirmation | LitejobsError:
    """The confirmation, in the caller's transaction; a refusal is answered, not raised, so
    that its audit row and the device's throttling state commit."""
    # One confirmation at a time per device: a code is checked, and a preview confirmed,
    # against the device's latest last_t and throttling state.
    locked = type(device).objects.using(database_alias()).select_for_update().get(pk=device.pk)
    audit.device = locked
    existing = BulkAction.objects.using(database_alias()).filter(confirmation=data["n"]).first()
    if existing is not None:
        audit.write("already-confirmed", bulk_action=existing)
        logger.info("bulk double submit id=%s user=%s", existing.pk, audit.username)
        return Confirmation(existing, False)
    fresh = read(action, tuple(data["i"]), user)
    audit.digest, audit.count = data["d"], fresh.count
    refusal = _set_refusal(fresh, data["d"])
    if refusal is None:  # the code is spent only on the set it was previewed for
        refusal = _code_refusal(locked, code)
    if refusal is not None:
        audit.write(refusal.code)
        return refusal
    return _record(action, fresh, user, locked, data, audit)


def _set_refusal(fresh: Preview, digest: str) -> LitejobsError | None:
    """Why the items read now cannot be confirmed: they changed, or none can be acted on."""
    if fresh.digest != digest:
        return _set_changed(fresh)
    if not fresh.lines:
        return InvalidInput(
            "None of the ticked items can be acted on (see why beside each): nothing to confirm.",
            code="selection-empty",
        )
    return None


def _code_refusal(device: Any, code: Any) -> BulkRefused | None:
    """Verify the code with django-otp (single-use, throttled); the refusal of a bad one."""
    result, wait = devices.verify(device, code)
    if result == "confirmed":
        return None
    return BulkRefused(
        _CODE_MESSAGES[result].format(
            digits=device.digits,
            device=f"your device {device.name!r}",
            wait=devices.wait_text(wait),
        ),
        code=result,
    )


def _record(
    action: BulkMoneyAction,
    fresh: Preview,
    user: Any,
    device: Any,
    data: dict[str, Any],
    audit: _Audit,
) -> Confirmation | LitejobsError:
    """Write the record and enqueue its items (a savepoint: a lost race leaves the audit)."""
    try:
        with transaction.atomic(using=database_alias()):
            record = _start(action, fresh, user, device, data["n"])
    except IntegrityError as error:
        if violates(error, UNFINISHED_ITEM_CONSTRAINT):
            # Another confirmation took one of these items at this instant: it is being paid;
            # read the set again (it is left out now).
            audit.write("bulk-set-changed")
            return _set_changed(read(action, tuple(data["i"]), user))
        existing = _double_submit(error, data["n"])
        audit.write("already-confirmed", bulk_action=existing)
        return Confirmation(existing, False)
    audit.write("confirmed", bulk_action=record)
    return Confirmation(record, True)


def _set_changed(fresh: Preview) -> BulkSetChanged:
    return BulkSetChanged(
        "The items changed since your preview (an item left the queue, was claimed or taken "
        "by another bulk action, or changed amount or payee): nothing moved. Read the fresh "
        "preview below and confirm it with a new code.",
        preview=fresh,
    )


def _double_submit(error: IntegrityError, confirmation: uuid.UUID) -> BulkAction:
    """The record a simultaneous submit of the same preview wrote (through another device of
    the user's: its unique confirmation won the race); any other failed insert is raised."""
    existing = BulkAction.objects.using(database_alias()).filter(confirmation=confirmation).first()
    if existing is None:
        raise error
    return existing


class _Audit:
    """Writes the ``BulkConfirmationAttempt`` of one confirmation attempt."""

    def __init__(
        self, user: Any, action: str, confirmation: str | None, remote_addr: str | None
    ) -> None:
        self.user = user
        self.username = devices.username(user)
        self.action = action[:100]
        self.confirmation = confirmation
        self.remote_addr = remote_addr or None
        self.device = None
        self.digest = ""
        self.count = 0

    def write(self, result: str, *, bulk_action: BulkAction | None = None) -> None:
        BulkConfirmationAttempt.objects.using(database_alias()).create(
            at=clock.now(),
            user=self.user,
            username=self.username,
            action=self.action,
            confirmation=self.confirmation,
            device=self.device.persistent_id if self.device is not None else "",
            device_name=(self.device.name if self.device is not None else "")[:64],
            result=result[:40],
            digest=self.digest,
            item_count=self.count,
            remote_addr=self.remote_addr,
            bulk_action=bulk_action,
        )
        if result != "confirmed":
            logger.warning(
                "bulk confirmation refused action=%s result=%s user=%s device=%s",
                self.action,
                result,
                self.username,
                self.device.persistent_id if self.device is not None else "-",
            )


def _start(
    action: BulkMoneyAction, fresh: Preview, user: Any, device: Any, confirmation: str
) -> BulkAction:
    """Write the record and its items and enqueue one job per item (the caller's transaction)."""
    now = clock.now()
    record = BulkAction.objects.using(database_alias()).create(
        action=action.name,
        queue=action.queue_name,
        confirmation=confirmation,
        user=user,
        username=devices.username(user),
        device=device.persistent_id,
        device_name=device.name[:64],
        digest=fresh.digest,
        item_count=fresh.count,
        totals={currency: str(total) for currency, total in fresh.totals},
        confirmed_at=now,
    )
    items = BulkActionItem.objects.using(database_alias()).bulk_create(
        BulkActionItem(
            bulk_action=record,
            work_item_id=line.work_item_id,
            object_id=line.object_id,
            label=line.label,
            amount=line.amount,
            currency=line.currency,
            bound=dict(line.bound),
            state=BulkItemState.PENDING,
            updated_at=now,
        )
        for line in fresh.lines
    )
    enqueued = run_bulk_item.enqueue_many(
        {
            "action": action.name,
            "item": entry.work_item_id,
            "confirmation": record.pk,
            "entry": entry.pk,
        }
        for entry in items
    )
    for entry, answer in zip(items, enqueued, strict=True):
        entry.job_id = answer.id
    BulkActionItem.objects.using(database_alias()).bulk_update(items, ["job_id"])
    return record
