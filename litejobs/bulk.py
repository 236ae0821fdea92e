"""Bulk money actions: a preview of every item, then a TOTP code from the finance phone.

An app declares the action in its ``queues.py``, beside the queue it acts on::

    from litejobs.bulk import bulk_money_action

    release = bulk_money_action(
        "payouts.release", queue="payouts", permission="payouts.release_payout",
        amount=lambda payout: (payout.amount, payout.currency),   # -> (Decimal, "EUR")
        bind=("payee", "account"),                                # who gets paid, where
        execute=pay_out,                                          # (payout, run) -> note
        description="Pays each payout to its payee and marks it paid.")

It is never a direct action. ``preview`` reads the ticked items and lists every one with its
amount, what it binds (the payee, the account: whatever decides where the money goes), the
count and the total per currency, and a **digest** (sha256 over the item ids, amounts,
currencies and bound values); it executes nothing. ``confirm`` then takes a TOTP code from the
acting user's django-otp device (the finance phone) and is **bound to that digest**: the set
is read again, and if anything changed (an item left the queue, was claimed, changed amount or
payee) the confirmation is refused with a fresh preview. The code is verified by django-otp's
``TOTPDevice.verify_token`` under a row lock on the device, so it is single-use (``last_t``)
and wrong codes are throttled (``throttling_failure_count``, doubling waits); every attempt,
right or wrong, is audited as a ``BulkConfirmationAttempt``.

A verified confirmation writes the ``BulkAction`` record and enqueues **one job per item**
(``enqueue_many``, keyed ``bulk:<action>:<item>:<confirmation>``) in one transaction. Each job
runs its item in its own atomic block: lock the item's record (only a pending or retrying item
executes), lock the row and check it still reads the confirmed amount and bound values,
resolve its work item, call ``execute``, record the outcome — all or nothing, so a replay, a
double submit or a worker killed mid-batch moves no money twice, and a payee changed after the
code was typed is never paid. A failed item keeps its error and can be retried alone
(``retry_item``, which needs the action's permission; the generic job retry refuses these jobs).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import re
import sys
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.apps import apps
from django.core import signing
from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db import IntegrityError, models, transaction
from django.db.models import Count

from . import queues, workqueues
from .conf import settings
from .core import clock
from .core.enums import CLAIM_GONE, CancelReason
from .core.retry import Retry
from .exceptions import (
    BulkActionNotFound,
    BulkRefused,
    BulkSetChanged,
    DeclarationError,
    InvalidInput,
    JobNotFound,
    LitejobsError,
    TransitionRefused,
    WorkQueueForbidden,
)
from .jobs import operations
from .jobs.declaration import job
from .models import (
    FINISHED_ITEM,
    UNFINISHED_BULK_ITEM,
    UNFINISHED_ITEM_CONSTRAINT,
    BulkAction,
    BulkActionItem,
    BulkConfirmationAttempt,
    BulkItemState,
    WorkItem,
    WorkItemState,
)

logger = logging.getLogger("litejobs.bulk")

#: Items one bulk money action may cover (the work-queue admin's selection limit).
ACTION_LIMIT = workqueues.ACT_LIMIT
#: How long a preview may be confirmed: after that the set is read again.
PREVIEW_LIFETIME = timedelta(minutes=15)
#: An ISO 4217-shaped currency code.
CURRENCY_PATTERN = re.compile(r"^[A-Z]{3}$")
#: Amounts the records hold exactly: at most 18 digits before the point and 6 after.
MAX_WHOLE_DIGITS = 18
MAX_PLACES = 6
#: Time steps either side of now within which a refused code is called expired, not wrong.
EXPIRED_WINDOW = 20
#: The django-otp app that holds TOTP devices.
TOTP_APP = "django_otp.plugins.otp_totp"
#: The job that executes one item of a confirmed bulk money action (declared below).
ITEM_JOB = "litejobs.bulk_item"
ITEM_QUEUE = "bulk"
#: Values one action may bind, and the longest text a bound value may read.
BIND_MAX = 10
BOUND_VALUE_MAX = 500
#: A bound name: an attribute of the row (``payee``, ``account``, ``payee_id``).
BIND_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")

_SALT = "litejobs.bulk.preview"
_DIGEST_VERSION = "litejobs.bulk.v2"

_actions: dict[str, BulkMoneyAction] = {}


def _invalid(what: str, message: str) -> DeclarationError:
    return DeclarationError(f"{what}: {message}", code="bulk-action-invalid")


# Declarations --------------------------------------------------------------------------------


@dataclass(frozen=True)
class BulkRun:
    """What ``execute(row, run)`` knows about the item it executes.

    ``key`` is the item's idempotency key (``bulk:<action>:<item>:<confirmation>``): pass it to
    any outside system that moves the money (a bank's idempotency key), so a repeated call is
    recognised there too. ``bulk_action`` is the confirmed record (who, when, which device).
    ``bound`` is what the code confirmed for the row (``{"payee": ..., "account": ...}``): the
    row was checked to still read so, under its lock, before ``execute`` was called.
    """

    bulk_action: BulkAction
    item: BulkActionItem
    key: str
    amount: Decimal
    currency: str
    attempt: int
    bound: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class BulkMoneyAction:
    """A declared bulk money action. Created by ``bulk_money_action(...)``; see its docstring."""

    name: str
    queue_name: str
    amount: Callable[[Any], Any]
    execute: Callable[[Any, BulkRun], Any]
    permission: str
    label: str
    description: str
    resolution: str
    bind: tuple[str, ...] | Callable[[Any], Mapping[str, Any]] = ()
    module: str = ""

    def __repr__(self) -> str:
        return f"<BulkMoneyAction {self.name} queue={self.queue_name}>"

    def queue(self) -> queues.WorkQueue:
        """The work queue it acts on (``work-queue-unknown`` if no installed app declares it)."""
        return queues.get(self.queue_name)

    def allows(self, user: Any) -> bool:
        """Whether ``user`` may run it: active, with its permission and its queue's."""
        if user is None or not getattr(user, "is_active", False):
            return False
        if not user.has_perm(self.permission):
            return False
        try:
            return self.queue().allows(user)
        except LitejobsError:
            return False

    def amount_of(self, row: Any) -> tuple[Decimal, str]:
        """``(amount, currency)`` of a row, as the declaration answers it, checked.

        Refused (``bulk-amount-invalid``): anything but a positive finite ``Decimal`` (or whole
        number) with at most 6 decimal places, and a three-letter upper-case currency. Floats
        are refused: money in binary fractions does not add up.
        """
        answer = self.amount(row)
        if not (isinstance(answer, tuple | list) and len(answer) == 2):
            raise self._bad(row, "answer (amount, currency), e.g. (Decimal('12.50'), 'EUR')")
        amount, currency = answer
        if isinstance(amount, bool) or not isinstance(amount, Decimal | int):
            raise self._bad(row, f"answer the amount as a Decimal, not a {type(amount).__name__}")
        amount = Decimal(amount)
        if not amount.is_finite() or amount <= 0:
            raise self._bad(row, "answer a positive, finite amount")
        exponent = amount.as_tuple().exponent
        places = -exponent if isinstance(exponent, int) and exponent < 0 else 0
        if places > MAX_PLACES or amount.adjusted() >= MAX_WHOLE_DIGITS:
            raise self._bad(
                row, f"keep amounts within {MAX_WHOLE_DIGITS} digits and {MAX_PLACES} decimals"
            )
        if not isinstance(currency, str) or not CURRENCY_PATTERN.match(currency):
            raise self._bad(row, "answer the currency as three upper-case letters, e.g. 'EUR'")
        return amount, currency

    def bound_of(self, row: Any) -> dict[str, str | None]:
        """What decides where ``row``'s money goes, as ``bind=`` declares it: ``{name: text}``
        sorted by name (``None`` stays ``None``; a related row is its primary key).

        Refused (``bulk-binding-invalid``): a name the row does not have, a ``bind`` callable
        that answers no mapping of names, more than 10 names, or a value over 500 characters.
        """
        if callable(self.bind):
            answer = self.bind(row)
            if not isinstance(answer, Mapping) or not all(
                isinstance(name, str) and name for name in answer
            ):
                raise self._bad(
                    row,
                    "answer bind(row) as a dict of names to values, e.g. "
                    "{'payee': row.payee, 'account': row.account}",
                    code="bulk-binding-invalid",
                )
            pairs = list(answer.items())
        else:
            pairs = [(name, _attribute(self, row, name)) for name in self.bind]
        if len(pairs) > BIND_MAX:
            raise self._bad(row, f"bind at most {BIND_MAX} values", code="bulk-binding-invalid")
        bound = {}
        for name, value in pairs:
            text = _bound_text(value)
            if text is not None and len(text) > BOUND_VALUE_MAX:
                raise self._bad(
                    row,
                    f"keep each bound value within {BOUND_VALUE_MAX} characters ({name!r} is "
                    "longer)",
                    code="bulk-binding-invalid",
                )
            bound[name] = text
        return dict(sorted(bound.items()))

    def _bad(self, row: Any, fix: str, *, code: str = "bulk-amount-invalid") -> InvalidInput:
        what = "amount" if code == "bulk-amount-invalid" else "binding"
        return InvalidInput(
            f"Bulk money action {self.name!r} got an unusable {what} for "
            f"{type(row).__name__} {getattr(row, 'pk', '?')}; {fix}.",
            code=code,
        )


def _attribute(action: BulkMoneyAction, row: Any, name: str) -> Any:
    """``row.<name>``; a foreign key reads its column (``payee`` -> ``payee_id``), no query."""
    try:
        field_ = row._meta.get_field(name) if hasattr(row, "_meta") else None
    except FieldDoesNotExist:  # a property or plain attribute
        field_ = None
    attribute = getattr(field_, "attname", None) if getattr(field_, "concrete", False) else None
    try:
        return getattr(row, attribute or name)
    except AttributeError:
        raise action._bad(
            row,
            f"bind= names {name!r}, which the row does not have; name its fields or attributes",
            code="bulk-binding-invalid",
        ) from None


def _bound_text(value: Any) -> str | None:
    """One bound value as the digest and the record hold it: exact text."""
    if value is None:
        return None
    if isinstance(value, models.Model):
        return str(value.pk)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return format(value.normalize(), "f") if value.is_finite() else str(value)
    return str(value)


def bulk_money_action(
    name: str,
    *,
    queue: str | queues.WorkQueue,
    amount: Callable[[Any], Any],
    execute: Callable[[Any, BulkRun], Any],
    permission: str,
    bind: Iterable[str] | Callable[[Any], Mapping[str, Any]] = (),
    label: str | None = None,
    description: str = "",
    resolution: str = "released",
) -> BulkMoneyAction:
    """Declare an admin action on a queue's listing that moves money for the ticked items —
    never directly: a preview of every item first, then a TOTP code from the acting user's
    phone (see the module docstring).

    - ``queue``: the work queue (or its name) whose items it acts on.
    - ``amount(row) -> (Decimal, currency)``: what the item moves; shown on the preview and
      bound into the digest. It is read again at execution: a changed amount is refused.
    - ``bind``: everything else that decides where the money goes — the names of the row's
      fields (``bind=("payee", "account")``; a foreign key binds its id) or a function
      ``bind(row) -> {"payee": ..., "account": ...}`` for values read elsewhere. They are shown
      on the preview, enter the digest and the record, and are read again under the row's lock
      before ``execute``: any change refuses the item (``bulk-binding-changed``).
    - ``execute(row, run)``: moves the money for one row, inside the item's transaction; may
      answer a short note. Make it idempotent on ``run.key`` (refuse to pay twice).
    - ``permission``: ``"app_label.codename"`` a user needs on top of the queue's permission.
    - ``resolution``: how the work item is resolved once its money moved (``"released"``);
      it need not be, and should not be, one of the queue's hand-picked resolutions.
    - ``label`` / ``description``: the button's text and what the preview says will happen.
    """
    what = f"Bulk money action {name!r}"
    if not isinstance(name, str) or not queues.NAME_PATTERN.match(name):
        raise _invalid(
            what, "give it a name of 1-100 letters, digits or '_.-' (e.g. 'payouts.release')."
        )
    if isinstance(queue, queues.WorkQueue):
        queue = queue.name
    if not isinstance(queue, str) or not queues.NAME_PATTERN.match(queue):
        raise _invalid(what, f"queue= must be a work queue or its name, got {queue!r}.")
    _check_callable(what, "amount", amount, 1, "amount(row) -> (Decimal, currency)")
    _check_callable(what, "execute", execute, 2, "execute(row, run)")
    bind = _check_bind(what, bind)
    if not isinstance(permission, str) or not queues.PERMISSION_PATTERN.match(permission):
        raise _invalid(
            what,
            "permission= must name the permission finance needs, as 'app_label.codename' "
            f"(e.g. 'payouts.release_payout'), got {permission!r}.",
        )
    if not isinstance(resolution, str) or not queues.RESOLUTION_PATTERN.match(resolution):
        raise _invalid(
            what,
            "resolution= must be 1-50 lower-case letters, digits, '_' or '-' (e.g. "
            f"'released'), got {resolution!r}.",
        )
    if label is not None and (not isinstance(label, str) or not label.strip()):
        raise _invalid(what, "label= must be a non-empty string when given.")
    if not isinstance(description, str):
        raise _invalid(what, "description= must be text.")
    module = str(sys._getframe(1).f_globals.get("__name__", ""))
    action = BulkMoneyAction(
        name=name,
        queue_name=queue,
        amount=amount,
        execute=execute,
        permission=permission,
        label=(label or name.rsplit(".", 1)[-1].replace("_", " ").capitalize()).strip(),
        description=description.strip()
        or f"Runs {getattr(execute, '__qualname__', 'execute')} once for each item, each in its "
        f"own transaction, and resolves its work item as {resolution!r}.",
        resolution=resolution,
        bind=bind,
        module=module,
    )
    existing = _actions.get(name)
    if existing is not None and existing.module != module:
        raise _invalid(what, f"declared twice ({existing.module} and {module}); rename one.")
    _actions[name] = action
    return action


def _check_callable(what: str, option: str, func: Any, arity: int, shape: str) -> None:
    if not callable(func):
        raise _invalid(what, f"{option}= must be a function: {shape}.")
    try:
        inspect.signature(func).bind(*([object()] * arity))
    except (TypeError, ValueError) as error:
        raise _invalid(
            what, f"{option}= must take {arity} positional argument(s): {shape}."
        ) from error


def _check_bind(what: str, bind: Any):
    """``bind=`` as the action keeps it: a tuple of names, or a one-argument function."""
    if callable(bind):
        _check_callable(what, "bind", bind, 1, "bind(row) -> {'payee': ..., 'account': ...}")
        return bind
    if isinstance(bind, str) or not isinstance(bind, Iterable):
        raise _invalid(
            what,
            "bind= must be a tuple of the row's field names, e.g. bind=('payee', 'account'), or "
            f"a function bind(row) -> dict; got {bind!r}.",
        )
    names = tuple(bind)
    bad = [name for name in names if not isinstance(name, str) or not BIND_NAME.match(name)]
    if bad or len(set(names)) != len(names) or len(names) > BIND_MAX:
        raise _invalid(
            what,
            f"bind= must name at most {BIND_MAX} distinct fields or attributes of the row "
            f"(letters, digits and '_'), e.g. ('payee', 'account'); got {bind!r}.",
        )
    return names


def _has_attribute(model: Any, name: str) -> bool:
    try:
        model._meta.get_field(name)
    except FieldDoesNotExist:  # a property or plain attribute may do
        return hasattr(model, name)
    return True


def get_action(name: str) -> BulkMoneyAction:
    """The declared action ``name``; ``bulk-action-unknown`` when no installed app declares it."""
    action = _actions.get(name)
    if action is None:
        raise BulkActionNotFound(
            f"No installed app declares a bulk money action named {name!r}: declare it with "
            "bulk_money_action(...) in an app's queues.py."
        )
    return action


def all_actions() -> list[BulkMoneyAction]:
    """Every declared action, by name."""
    return [_actions[name] for name in sorted(_actions)]


def actions_for(queue: str) -> list[BulkMoneyAction]:
    """The actions declared on one queue, by name."""
    return [action for action in all_actions() if action.queue_name == queue]


def unregister(name: str) -> None:
    """Forget an action (tests that declare actions on the fly)."""
    _actions.pop(name, None)


def problems() -> list[tuple[str, str, str]]:
    """What ``manage.py check`` reports (litejobs.E012): ``(code, module, message)``."""
    found = []
    declared = {q.name: q for q in queues.all_queues()}
    for action in all_actions():
        queue = declared.get(action.queue_name)
        if queue is None:
            found.append(
                (
                    "bulk-action-invalid",
                    action.module,
                    f"bulk money action {action.name!r} acts on work queue "
                    f"{action.queue_name!r}, which no installed app declares.",
                )
            )
            continue
        missing = (
            []
            if callable(action.bind)
            else [name for name in action.bind if not _has_attribute(queue.model, name)]
        )
        if missing:
            found.append(
                (
                    "bulk-binding-invalid",
                    action.module,
                    f"bulk money action {action.name!r} binds {', '.join(map(repr, missing))}, "
                    f"which {queue.model._meta.label} has no field or attribute named.",
                )
            )
    if _actions and not (apps.is_installed("django_otp") and apps.is_installed(TOTP_APP)):
        found.append(
            (
                "bulk-otp-missing",
                next(iter(_actions.values())).module,
                "bulk money actions are confirmed with a TOTP code: add 'django_otp' and "
                f"'{TOTP_APP}' to INSTALLED_APPS (and migrate).",
            )
        )
    return found


# Who acts ------------------------------------------------------------------------------------


def check_user(action: BulkMoneyAction, user: Any) -> None:
    """Refuse a user who may not run ``action``: ``user-missing``, ``work-queue-forbidden``
    (the queue's permission), ``bulk-forbidden`` (the action's permission)."""
    if user is None or getattr(user, "pk", None) is None:
        raise InvalidInput(
            "Say who acts: pass the signed-in user (the admin passes it).", code="user-missing"
        )
    queue = action.queue()
    if not queue.allows(user):
        logger.info("bulk forbidden queue=%s user=%s", queue.name, _username(user))
        raise WorkQueueForbidden(
            f"You may not work queue {queue.name!r}: it needs the permission "
            f"{queue.permission!r}. Ask an administrator to grant it (directly or via a group)."
        )
    if not user.has_perm(action.permission):
        logger.info("bulk forbidden action=%s user=%s", action.name, _username(user))
        raise BulkRefused(
            f"You may not run {action.label!r} ({action.name}): it needs the permission "
            f"{action.permission!r}. Ask an administrator to grant it (directly or via a group).",
            code="bulk-forbidden",
        )


def _username(user: Any) -> str:
    name = user.get_username() if hasattr(user, "get_username") else ""
    return (name or f"user:{getattr(user, 'pk', '?')}")[:150]


def _totp_model():
    if not (apps.is_installed("django_otp") and apps.is_installed(TOTP_APP)):
        raise BulkRefused(
            "Bulk money actions need django-otp's TOTP devices: add 'django_otp' and "
            f"'{TOTP_APP}' to INSTALLED_APPS and migrate.",
            code="bulk-otp-missing",
        )
    from django_otp.plugins.otp_totp.models import TOTPDevice

    return TOTPDevice


def devices_for(user: Any) -> list:
    """The user's confirmed TOTP devices (their phones), oldest first."""
    if user is None or getattr(user, "pk", None) is None:
        return []
    model = _totp_model()
    return list(model.objects.using(_alias()).filter(user=user, confirmed=True).order_by("pk"))


NO_DEVICE_HELP = (
    "Bulk money actions are confirmed with a code from your phone, and you have no confirmed "
    "TOTP device. Ask an administrator to add one for you (admin > TOTP devices > Add: your "
    "user, 'Confirmed' ticked), then scan its QR code with an authenticator app on your phone."
)


def _device(user: Any, device_id: Any = None):
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
        _device(user)
    except LitejobsError as error:
        return error.args[0]
    return ""


# Preview -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PreviewLine:
    """One item the action would act on, with the amount it would move and what it binds
    (``bound``: ``(name, value)`` pairs, such as the payee and the account)."""

    work_item_id: int
    object_id: str
    label: str
    amount: Decimal
    currency: str
    bound: tuple[tuple[str, str | None], ...] = ()


@dataclass(frozen=True)
class Excluded:
    """A ticked item the action leaves out, and why (``code`` and a sentence)."""

    work_item_id: int
    code: str
    reason: str


@dataclass(frozen=True)
class Preview:
    """Everything a person confirms: the items with amounts, the totals, and their digest.

    ``token`` is what the confirmation sends back: the selection, the digest, the preview's
    id (``confirmation``) and time, signed for this user, so nothing but this preview can be
    confirmed with it.
    """

    action: BulkMoneyAction
    selection: tuple[int, ...]
    lines: tuple[PreviewLine, ...]
    excluded: tuple[Excluded, ...]
    totals: tuple[tuple[str, Decimal], ...]
    digest: str
    confirmation: uuid.UUID
    created_at: datetime
    token: str = field(repr=False, default="")

    @property
    def count(self) -> int:
        """How many items the action would act on."""
        return len(self.lines)

    def totals_text(self) -> str:
        """``EUR 18,400.00 · USD 1,250.00``."""
        return " · ".join(money(total, currency) for currency, total in self.totals)


def bound_text(bound: Mapping[str, str | None] | Iterable[tuple[str, str | None]]) -> str:
    """``payee: Acme · account: DE00 …``: bound values as the preview and the record show them."""
    pairs = bound.items() if isinstance(bound, Mapping) else bound
    return " · ".join(f"{name}: {'-' if value is None else value}" for name, value in pairs)


def money(amount: Decimal, currency: str) -> str:
    """``EUR 1,900.00``: two decimals, more only when the amount has them."""
    amount = Decimal(amount)
    if amount == amount.quantize(Decimal("0.01")):
        return f"{currency} {amount:,.2f}"
    return f"{currency} {amount.normalize():,f}"


def digest_of(action_name: str, lines: Iterable[PreviewLine]) -> str:
    """sha256 over the action and the sorted (item id, row, amount, currency, bound values) of
    every line.

    Amounts enter in canonical form (``Decimal.normalize``), so ``12.50`` and ``12.500000``
    (the same money, as the record stores it) give one digest; the bound values enter as
    sorted JSON (escaped, so no value can pass for another line or field).
    """
    hasher = hashlib.sha256(f"{_DIGEST_VERSION}\n{action_name}\n".encode())
    for line in sorted(lines, key=lambda line: line.work_item_id):
        amount = format(line.amount.normalize(), "f")
        bound = json.dumps(dict(line.bound), sort_keys=True, separators=(",", ":"))
        hasher.update(
            f"{line.work_item_id}\t{json.dumps(line.object_id)}\t{amount}\t{line.currency}\t"
            f"{bound}\n".encode()
        )
    return hasher.hexdigest()


def _selection(item_ids: Iterable[Any]) -> tuple[int, ...]:
    try:
        ids = tuple(dict.fromkeys(int(i) for i in item_ids))
    except (TypeError, ValueError):
        raise InvalidInput(
            "Work items are named by their ids (whole numbers).", code="item-invalid"
        ) from None
    if not ids:
        raise InvalidInput("Tick at least one item first.", code="selection-empty")
    if len(ids) > ACTION_LIMIT:
        raise InvalidInput(
            f"A bulk money action covers at most {ACTION_LIMIT} items ({len(ids)} ticked); "
            "narrow the selection.",
            code="selection-too-large",
        )
    return ids


def preview(
    action: str | BulkMoneyAction, item_ids: Iterable[Any], user: Any, *, device: Any = None
) -> Preview:
    """List every ticked item the action would act on, with its amount, the count and the
    total per currency; executes nothing.

    Refused before reading anything when the user may not run the action or has no confirmed
    TOTP device (the action is unavailable without one). A ticked item is left out — listed
    in ``excluded`` with the reason — when it is no longer in the queue, someone else holds a
    live claim on it, the queue requires a claim the user does not hold, its row is gone, or a
    confirmed bulk action is already executing it.
    """
    action = action if isinstance(action, BulkMoneyAction) else get_action(action)
    check_user(action, user)
    _device(user, device)
    return _read(action, _selection(item_ids), user)


def _read(action: BulkMoneyAction, selection: tuple[int, ...], user: Any) -> Preview:
    queue = action.queue()
    now = clock.now()
    items = {
        item.pk: item
        for item in WorkItem.objects.using(_alias()).filter(queue=queue.name, pk__in=selection)
    }
    busy = dict(
        BulkActionItem.objects.using(_alias())
        .filter(work_item_id__in=list(items), state__in=UNFINISHED_BULK_ITEM)
        .values_list("work_item_id", "bulk_action_id")
    )
    rows = workqueues.targets(queue, list(items.values()))
    lines: list[PreviewLine] = []
    excluded: list[Excluded] = []
    for item_id in selection:
        item = items.get(item_id)
        reason = _exclusion(queue, item, item_id, busy, rows, user, now)
        if reason is not None:
            excluded.append(Excluded(item_id, *reason))
            continue
        row = rows[item.object_id]
        amount, currency = action.amount_of(row)
        bound = tuple(action.bound_of(row).items())
        lines.append(PreviewLine(item_id, item.object_id, str(row)[:200], amount, currency, bound))
    totals: dict[str, Decimal] = {}
    for line in lines:
        totals[line.currency] = totals.get(line.currency, Decimal(0)) + line.amount
    made = Preview(
        action=action,
        selection=selection,
        lines=tuple(lines),
        excluded=tuple(excluded),
        totals=tuple(sorted(totals.items())),
        digest=digest_of(action.name, lines),
        confirmation=uuid.uuid4(),
        created_at=now,
    )
    token = signing.dumps(
        {
            "a": action.name,
            "u": user.pk,
            "i": list(selection),
            "d": made.digest,
            "n": made.confirmation.hex,
            "t": now.timestamp(),
        },
        salt=_SALT,
        compress=True,
    )
    return replace(made, token=token)


def _exclusion(queue, item, item_id, busy, rows, user, now) -> tuple[str, str] | None:
    if item is None:
        return "item-not-found", f"Item #{item_id} is not in queue {queue.name!r} (purged?)."
    if item.state in FINISHED_ITEM:
        how = "done" if item.state == WorkItemState.DONE else "cancelled"
        resolution = f" ({queue.resolution_label(item.resolution)})" if item.resolution else ""
        return "item-closed", (
            f"Item #{item_id} left the queue: {how}{resolution} by {item.resolved_by_name or '?'}."
        )
    if item_id in busy:
        return "bulk-item-pending", (
            f"Item #{item_id} is already being executed by bulk action #{busy[item_id]}."
        )
    held = item.state == WorkItemState.CLAIMED and item.claim_expires_at > now
    if held and item.claimed_by_id != user.pk:
        return "claim-held", (
            f"Item #{item_id} is held by {item.claimed_by_name or 'someone'} until "
            f"{item.claim_expires_at:%Y-%m-%d %H:%M} UTC."
        )
    if queue.claims_required and not held:
        return "claim-required", f"Queue {queue.name!r} requires a claim: claim item #{item_id}."
    if item.object_id not in rows:
        return "item-target-missing", f"Item #{item_id}'s row no longer exists."
    return None


def _read_token(token: Any, user: Any) -> dict[str, Any]:
    try:
        data = signing.loads(str(token or ""), salt=_SALT)
        if user is None or data.get("u") != getattr(user, "pk", None):
            raise ValueError("another user's preview")
        if not (isinstance(data["a"], str) and isinstance(data["d"], str)):
            raise TypeError("malformed preview")
        data = {
            **data,
            "n": uuid.UUID(hex=data["n"]),
            "t": datetime.fromtimestamp(float(data["t"]), tz=UTC),
            "i": [int(i) for i in data["i"]],
        }
    except (signing.BadSignature, ValueError, KeyError, TypeError, AttributeError) as error:
        raise BulkRefused(
            "This confirmation does not come from a preview of yours (it was altered, or made "
            "for another user): nothing moved. Start again from the queue page.",
            code="bulk-preview-invalid",
        ) from error
    if clock.now() - data["t"] > PREVIEW_LIFETIME:
        raise BulkRefused(
            f"This preview is older than {int(PREVIEW_LIFETIME.total_seconds() // 60)} minutes: "
            "nothing moved. Preview the items again and confirm the fresh preview.",
            code="bulk-preview-expired",
        )
    return data


def reread(token: Any, user: Any) -> Preview | None:
    """The preview a confirmation names, read again to show it after a refused code: with its
    own token while the items still match its digest, else as a fresh preview; ``None`` when
    the token is not a current preview of this user's."""
    try:
        data = _read_token(token, user)
        action = get_action(data["a"])
    except LitejobsError:
        return None
    fresh = _read(action, tuple(data["i"]), user)
    if fresh.digest != data["d"]:
        return fresh
    return replace(fresh, confirmation=data["n"], created_at=data["t"], token=str(token))


# Confirmation --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Confirmation:
    """A confirmed action: its record, and whether this call wrote it (``False``: a double
    submit of the same preview, answered with the record the first submit wrote)."""

    bulk_action: BulkAction
    created: bool


_CODE_MESSAGES = {
    "bulk-code-missing": "Type the {digits}-digit code your authenticator app shows for "
    "{device}: nothing moved.",
    "bulk-code-invalid": "That code is not the one {device} shows: nothing moved. Type the "
    "current {digits}-digit code (wrong codes make you wait longer before the next try).",
    "bulk-code-expired": "That code has expired (or {device}'s clock is off): nothing moved. "
    "Type the code the app shows now.",
    "bulk-code-reused": "That code was already used: each code confirms once. Wait for the next "
    "code on {device} and type it: nothing moved.",
    "bulk-code-throttled": "Too many wrong codes for {device}: wait until {until} UTC, then type "
    "the current code (each wrong code doubles the wait). Nothing moved.",
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
    is too old; a user who may no longer run the action or has no device; a missing, wrong,
    expired or already used code, or one typed while django-otp's throttling makes the device
    wait (every wrong code counts, and the wait doubles). ``BulkSetChanged`` (carrying a fresh
    preview) when the items read now do not match the previewed digest. Every attempt is
    audited. A second submit of a confirmed preview answers the same record and enqueues
    nothing.
    """
    try:
        data = _read_token(token, user)
    except BulkRefused as error:  # audited too: a forged or stale form is worth knowing about
        _Audit(user, "", None, remote_addr).write(error.code)
        raise
    audit = _Audit(user, str(data["a"]), data["n"], remote_addr)
    try:
        action = get_action(data["a"])
        check_user(action, user)
        chosen = _device(user, device)
    except LitejobsError as error:
        audit.write(error.code)
        raise
    audit.device = chosen
    refusal: LitejobsError | None = None
    with transaction.atomic(using=_alias()):
        # One confirmation at a time per device: a code is checked, and a preview confirmed,
        # against the device's latest last_t and throttling state.
        locked = type(chosen).objects.using(_alias()).select_for_update().get(pk=chosen.pk)
        audit.device = locked
        existing = BulkAction.objects.using(_alias()).filter(confirmation=data["n"]).first()
        if existing is not None:
            audit.write("already-confirmed", bulk_action=existing)
            logger.info("bulk double submit id=%s user=%s", existing.pk, audit.username)
            return Confirmation(existing, False)
        fresh = _read(action, tuple(data["i"]), user)
        audit.digest, audit.count = data["d"], fresh.count
        if fresh.digest != data["d"]:
            audit.write("bulk-set-changed")
            refusal = _set_changed(fresh)
        elif not fresh.lines:
            audit.write("selection-empty")
            refusal = InvalidInput(
                "None of the ticked items can be acted on (see why beside each): nothing to "
                "confirm.",
                code="selection-empty",
            )
        else:
            result, until = _verify(locked, code)
            if result != "confirmed":
                audit.write(result)
                refusal = BulkRefused(
                    _CODE_MESSAGES[result].format(
                        digits=locked.digits,
                        device=f"your device {locked.name!r}",
                        until=f"{until:%H:%M:%S}" if until else "a moment",
                    ),
                    code=result,
                )
            else:
                try:
                    with transaction.atomic(using=_alias()):
                        record = _start(action, fresh, user, locked, data["n"])
                except IntegrityError as error:
                    if _violates(error, UNFINISHED_ITEM_CONSTRAINT):
                        # Another confirmation took one of these items at this instant: it
                        # is being paid; read the set again (it is left out now).
                        audit.write("bulk-set-changed")
                        refusal = _set_changed(_read(action, tuple(data["i"]), user))
                    else:
                        existing = _double_submit(error, data["n"])
                        audit.write("already-confirmed", bulk_action=existing)
                        return Confirmation(existing, False)
                else:
                    audit.write("confirmed", bulk_action=record)
    if refusal is not None:  # the audit row and django-otp's throttling state are committed
        raise refusal
    logger.info(
        "bulk confirmed id=%s action=%s items=%s user=%s device=%s",
        record.pk,
        action.name,
        record.item_count,
        record.username,
        record.device,
    )
    return Confirmation(record, True)


def _set_changed(fresh: Preview) -> BulkSetChanged:
    return BulkSetChanged(
        "The items changed since your preview (an item left the queue, was claimed or taken "
        "by another bulk action, or changed amount or payee): nothing moved. Read the fresh "
        "preview below and confirm it with a new code.",
        preview=fresh,
    )


def _violates(error: IntegrityError, constraint: str) -> bool:
    """Whether ``error`` is a violation of the named constraint."""
    diag = getattr(error.__cause__, "diag", None)
    name = getattr(diag, "constraint_name", None)
    return name == constraint or (name is None and constraint in str(error))


def _double_submit(error: IntegrityError, confirmation: uuid.UUID) -> BulkAction:
    """The record a simultaneous submit of the same preview wrote (through another device of
    the user's: its unique confirmation won the race); any other failed insert is raised."""
    existing = BulkAction.objects.using(_alias()).filter(confirmation=confirmation).first()
    if existing is None:
        raise error
    return existing


def _verify(device: Any, code: Any) -> tuple[str, datetime | None]:
    """Verify a code with django-otp; answers ``confirmed`` or the refusal's code."""
    from django_otp.oath import TOTP

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


class _Audit:
    """Writes the ``BulkConfirmationAttempt`` of one confirmation attempt."""

    def __init__(self, user: Any, action: str, confirmation, remote_addr) -> None:
        self.user = user
        self.username = _username(user)
        self.action = action[:100]
        self.confirmation = confirmation
        self.remote_addr = remote_addr or None
        self.device = None
        self.digest = ""
        self.count = 0

    def write(self, result: str, *, bulk_action: BulkAction | None = None) -> None:
        BulkConfirmationAttempt.objects.using(_alias()).create(
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


def _start(action: BulkMoneyAction, fresh: Preview, user: Any, device: Any, confirmation):
    """Write the record and its items and enqueue one job per item (the caller's transaction)."""
    now = clock.now()
    record = BulkAction.objects.using(_alias()).create(
        action=action.name,
        queue=action.queue_name,
        confirmation=confirmation,
        user=user,
        username=_username(user),
        device=device.persistent_id,
        device_name=device.name[:64],
        digest=fresh.digest,
        item_count=fresh.count,
        totals={currency: str(total) for currency, total in fresh.totals},
        confirmed_at=now,
    )
    items = BulkActionItem.objects.using(_alias()).bulk_create(
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
    BulkActionItem.objects.using(_alias()).bulk_update(items, ["job_id"])
    return record


# Execution -----------------------------------------------------------------------------------


def item_key(action: str, item: int, confirmation: int) -> str:
    """The idempotency key of one item's job: ``bulk:<action>:<work item>:<bulk action>``."""
    return f"bulk:{action}:{item}:{confirmation}"


#: Refusals of litejobs itself (amount changed, item closed, claim held...) and
#: ``litejobs.Permanent`` fail an item at once; other errors are retried twice, with backoff.
ITEM_RETRY = Retry(
    attempts=3, backoff="exponential", base="10s", max="5m", give_up_on=(LitejobsError,)
)


@job(
    name=ITEM_JOB,
    queue=ITEM_QUEUE,
    key=item_key,
    retry=ITEM_RETRY,
    timeout="5m",
    # The item's own atomic block below holds the money and its outcome together; the job's
    # completion follows it (a crash in between re-runs the job, which finds the item done).
    atomic=False,
)
def run_bulk_item(ctx, action: str, item: int, confirmation: int, entry: int) -> dict:
    """Execute one item of a confirmed bulk money action, once.

    One transaction: lock the item's record (a second run of the same key waits here, then
    finds it succeeded and does nothing; only a pending or retrying item goes on — a failed
    one runs again only through ``retry_item``), lock the row and check it still reads the
    confirmed amount and bound values, resolve the work item for the confirming user, call
    ``execute``, record ``succeeded``. Any error rolls all of it back; the failure is then
    recorded on the item (``retrying`` or ``failed`` with the error) and the job fails or
    retries as its policy says.
    """
    alias = _alias()
    try:
        with transaction.atomic(using=alias):
            record = (
                BulkActionItem.objects.using(alias)
                .select_for_update(of=("self",))
                .select_related("bulk_action")
                .get(pk=entry)
            )
            if record.state == BulkItemState.SUCCEEDED:
                return {"outcome": "succeeded", "again": True}
            if record.state not in UNFINISHED_BULK_ITEM:
                raise _NotPending(record)
            return _execute_item(ctx, get_action(action), record)
    except _NotPending:
        raise  # the item's own record (its state and error) stays as it is
    except Exception as error:
        if ctx.cancel_reason not in (CancelReason.DRAIN, *CLAIM_GONE):
            _record_failure(ctx, entry, error)
        raise


class _NotPending(BulkRefused):
    """The item's job ran while the item is not pending or retrying (its job was sent back to
    ready by other means than ``retry_item``): nothing executes."""

    def __init__(self, record: BulkActionItem) -> None:
        super().__init__(
            f"Item #{record.work_item_id} of bulk action #{record.bulk_action_id} is "
            f"{record.get_state_display().lower()}, so its job executed nothing: only a pending "
            "or retrying item executes. Retry a failed item from its bulk action's page in the "
            "admin (Bulk actions), which needs the action's permission.",
            code="bulk-item-not-pending",
        )


def _execute_item(ctx, action: BulkMoneyAction, record: BulkActionItem) -> dict:
    queue = action.queue()
    bulk = record.bulk_action
    try:
        key = queue.model._meta.pk.to_python(record.object_id)
    except (ValidationError, ValueError, TypeError):  # not a key of this model: no row
        key = None
    rows = queue.model._default_manager.using(_alias()).select_for_update(of=("self",))
    # Locked until the item's transaction ends: nobody changes the payee while it is paid.
    row = rows.filter(pk=key).first() if key is not None else None
    if row is None:
        raise LitejobsError(
            f"{queue.model._meta.label} {record.object_id} no longer exists: nothing moved for "
            f"item #{record.work_item_id}.",
            code="item-target-missing",
        )
    amount, currency = action.amount_of(row)
    if amount != record.amount or currency != record.currency:
        raise BulkRefused(
            f"Item #{record.work_item_id} now reads {money(amount, currency)}, not the confirmed "
            f"{money(record.amount, record.currency)}: nothing moved. Preview and confirm it "
            "again if the new amount is right.",
            code="bulk-amount-changed",
        )
    bound = action.bound_of(row)
    if bound != record.bound:
        changed = sorted(
            name for name in {*bound, *record.bound} if bound.get(name) != record.bound.get(name)
        )
        raise BulkRefused(
            f"Item #{record.work_item_id}'s {', '.join(changed)} changed since it was confirmed: "
            "nothing moved. The confirmed values stay on this record; preview and confirm the "
            "item again if the new ones are right.",
            code="bulk-binding-changed",
        )
    workqueues.settle(
        record.work_item_id,
        queue=queue.name,
        resolution=action.resolution,
        user_id=bulk.user_id,
        user_name=bulk.username,
        note=f"bulk money action #{bulk.pk} ({action.name})",
    )
    run = BulkRun(
        bulk_action=bulk,
        item=record,
        key=ctx.key,
        amount=record.amount,
        currency=record.currency,
        attempt=ctx.attempt,
        bound=dict(record.bound),
    )
    note = action.execute(row, run)
    now = clock.now()
    record.state = BulkItemState.SUCCEEDED
    record.note = "" if note is None else str(note)[:500]
    record.error = record.error_code = ""
    record.attempts = ctx.attempt
    record.job_id = ctx.job_id
    record.updated_at = record.finished_at = now
    record.save(
        using=_alias(),
        update_fields=[
            "state",
            "note",
            "error",
            "error_code",
            "attempts",
            "job_id",
            "updated_at",
            "finished_at",
        ],
    )
    logger.info(
        "bulk item succeeded action=%s bulk=%s item=%s job=%s",
        action.name,
        bulk.pk,
        record.work_item_id,
        ctx.job_id,
    )
    return {"outcome": "succeeded", "note": record.note}


def _record_failure(ctx, entry: int, error: BaseException) -> None:
    final = ctx.final_attempt or run_bulk_item.retry.gives_up_on(error)
    message = str(error) if isinstance(error, LitejobsError) else f"{type(error).__name__}: {error}"
    code = getattr(error, "code", "") or f"{type(error).__module__}.{type(error).__qualname__}"
    now = clock.now()
    try:
        with transaction.atomic(using=_alias()):
            BulkActionItem.objects.using(_alias()).filter(pk=entry).exclude(
                state=BulkItemState.SUCCEEDED
            ).update(
                state=BulkItemState.FAILED if final else BulkItemState.RETRYING,
                error=message[:2000],
                error_code=code[:100],
                attempts=ctx.attempt,
                job_id=ctx.job_id,
                updated_at=now,
                finished_at=now if final else None,
            )
    except Exception:  # the job's own failure still records the error
        logger.exception("bulk item failure not recorded entry=%s", entry)
    logger.warning(
        "bulk item %s entry=%s job=%s attempt=%s error=%s",
        "failed" if final else "retrying",
        entry,
        ctx.job_id,
        ctx.attempt,
        code,
    )


def _refuse_job_retry(job_id: int, row: Mapping[str, Any], by: str) -> TransitionRefused | None:
    """The generic job retry may not move money: an item's job is retried from its bulk action
    (``retry_item``), which needs the action's permission and re-checks the item."""
    if row["name"] != ITEM_JOB:
        return None
    bulk_action = (row["payload"] or {}).get("confirmation", "?")
    logger.info("job retry refused id=%s reason=bulk-item by=%s", job_id, by)
    return TransitionRefused(
        f"Job {job_id} pays an item of bulk money action #{bulk_action}; a job retry may "
        "not move money. Retry the item from that bulk action's page in the admin (Bulk "
        "actions, 'Retry this item', or litejobs.bulk.retry_item), which needs the "
        "action's permission and checks the item is failed and unchanged.",
        code="bulk-retry-required",
    )


operations.retry_guards.register("bulk", _refuse_job_retry)


# After the fact ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    """How a bulk action's items stand: counts per state and the overall status."""

    pending: int
    retrying: int
    succeeded: int
    failed: int

    @property
    def status(self) -> str:
        """``executing``, ``succeeded`` (every item), or ``failed`` (some items failed)."""
        if self.pending or self.retrying:
            return "executing"
        return "failed" if self.failed else "succeeded"


def summary(bulk_action: BulkAction | int) -> Summary:
    """Counts of the action's items per outcome (one query)."""
    pk = bulk_action.pk if isinstance(bulk_action, BulkAction) else int(bulk_action)
    counts = dict.fromkeys(BulkItemState.values, 0)
    for state, n in (
        BulkActionItem.objects.using(_alias())
        .filter(bulk_action_id=pk)
        .values_list("state")
        .annotate(n=Count("id"))
        .order_by()
    ):
        counts[state] = n
    return Summary(**counts)


def retry_item(entry: BulkActionItem | int, user: Any) -> BulkActionItem:
    """Run a failed item again, under the same confirmation and key (no new code needed: the
    item was confirmed; its amount and bound values are checked again when it runs).

    Only ``failed`` items (their job gave up) may be retried (``bulk-item-not-failed``); the
    user needs the action's permission. Refused (``bulk-item-pending``) while another bulk
    action is paying the same work item. Sends the item's job back to ready
    (``litejobs.operations.requeue``; the generic job retry refuses bulk items), or enqueues it
    again under the same key if the job was purged.
    """
    pk = entry.pk if isinstance(entry, BulkActionItem) else int(entry)
    record = (
        BulkActionItem.objects.using(_alias()).select_related("bulk_action").filter(pk=pk).first()
    )
    if record is None:
        raise BulkRefused(f"No bulk action item #{pk}.", code="bulk-item-not-failed")
    action = get_action(record.bulk_action.action)
    check_user(action, user)
    by = _username(user)
    try:
        with transaction.atomic(using=_alias()):
            locked, job_id = _send_back(action, pk, record, by)
    except IntegrityError as error:
        if not _violates(error, UNFINISHED_ITEM_CONSTRAINT):
            raise
        other = (
            BulkActionItem.objects.using(_alias())
            .filter(work_item_id=record.work_item_id, state__in=UNFINISHED_BULK_ITEM)
            .values_list("bulk_action_id", flat=True)
            .first()
        )
        raise BulkRefused(
            f"Item #{record.work_item_id} is being paid by bulk action #{other or '?'} now: one "
            "bulk action pays a work item at a time. Retry this item after that one finished, "
            "if it still needs paying.",
            code="bulk-item-pending",
        ) from error
    logger.info(
        "bulk item retried bulk=%s item=%s job=%s by=%s",
        record.bulk_action_id,
        locked.work_item_id,
        job_id,
        by,
    )
    return locked


def _send_back(action: BulkMoneyAction, pk: int, record: BulkActionItem, by: str):
    """Mark the failed item pending and its job ready again (the caller's transaction)."""
    locked = BulkActionItem.objects.using(_alias()).select_for_update().get(pk=pk)
    if locked.state != BulkItemState.FAILED:
        raise BulkRefused(
            f"Item #{locked.work_item_id} of bulk action #{record.bulk_action_id} is "
            f"{locked.get_state_display().lower()}, not failed: only a failed item is "
            "retried by hand (a retrying one retries by itself).",
            code="bulk-item-not-failed",
        )
    job_id = locked.job_id
    try:
        if job_id is None:
            raise JobNotFound("no job")
        operations.requeue(job_id, by=by)
    except JobNotFound:
        job_id = run_bulk_item.enqueue(
            action=action.name,
            item=locked.work_item_id,
            confirmation=locked.bulk_action_id,
            entry=locked.pk,
        ).id
    locked.state = BulkItemState.PENDING
    locked.job_id = job_id
    locked.finished_at = None
    locked.updated_at = clock.now()
    locked.save(using=_alias(), update_fields=["state", "job_id", "finished_at", "updated_at"])
    return locked, job_id


def _alias() -> str:
    return settings.DATABASE


__all__ = [
    "ACTION_LIMIT",
    "BulkMoneyAction",
    "BulkRun",
    "Confirmation",
    "Excluded",
    "Preview",
    "PreviewLine",
    "Summary",
    "actions_for",
    "all_actions",
    "bound_text",
    "bulk_money_action",
    "confirm",
    "devices_for",
    "digest_of",
    "get_action",
    "money",
    "preview",
    "reread",
    "retry_item",
    "run_bulk_item",
    "summary",
    "unavailable_reason",
]
