"""Bulk money actions' declarations: ``bulk_money_action(...)`` in an app's ``queues.py``.

An action names the work queue whose items it acts on, how to read each row's amount and
what it binds (who gets paid, where), the function that moves the money, and the permission
finance needs. See ``litejobs.bulk`` for how an action runs.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from django.core.exceptions import FieldDoesNotExist
from django.db import models

from ..conf import settings
from ..core.registry import Registry
from ..exceptions import DeclarationError, InvalidInput, LitejobsError
from ..models import BulkAction, BulkActionItem
from ..workqueues import declarations as queues
from .errors import BulkActionNotFound, BulkRefused

#: An ISO 4217-shaped currency code.
CURRENCY_PATTERN = re.compile(r"^[A-Z]{3}$")
#: Amounts the records hold exactly: at most 18 digits before the point and 6 after.
MAX_WHOLE_DIGITS = 18
MAX_PLACES = 6
#: Values one action may bind, and the longest text a bound value may read.
BIND_MAX = 10
BOUND_VALUE_MAX = 500
#: A bound name: an attribute of the row (``payee``, ``account``, ``payee_id``).
BIND_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")


def _invalid(what: str, message: str) -> DeclarationError:
    return DeclarationError(f"{what}: {message}", code="bulk-action-invalid")


def _declared_twice(name: str, existing: BulkMoneyAction, new: BulkMoneyAction) -> DeclarationError:
    return _invalid(
        f"Bulk money action {name!r}",
        f"declared twice ({existing.module} and {new.module}); rename one.",
    )


def _unknown(name: str) -> BulkActionNotFound:
    return BulkActionNotFound(
        f"No installed app declares a bulk money action named {name!r}: declare it with "
        "bulk_money_action(...) in an app's queues.py."
    )


_actions: Registry[BulkMoneyAction] = Registry(
    "bulk money action", duplicate=_declared_twice, missing=_unknown
)


def database_alias() -> str:
    """The database of bulk money records (litejobs')."""
    return settings.DATABASE


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
    #: Why the amount alone decides where the money goes (``bind=False``); else empty.
    unbound_reason: str = ""
    module: str = ""

    def __repr__(self) -> str:
        return f"<BulkMoneyAction {self.name} queue={self.queue_name}>"

    def queue(self) -> queues.WorkQueue:
        """The work queue it acts on (``work-queue-unknown`` if no installed app declares it)."""
        return queues.get(self.queue_name)

    @property
    def unbound(self) -> bool:
        """It binds nothing but the amount and does not say why (litejobs.E013): a payee or
        account changed after the code was typed would be paid."""
        return not self.bind and not self.unbound_reason

    def check_binding(self) -> None:
        """Refuse to preview or confirm an action that binds nothing (``bulk-binding-missing``),
        whether or not the worker's system checks ran."""
        if self.unbound:
            raise BulkRefused(
                f"Bulk money action {self.name!r} binds nothing but the amount, so nothing may "
                "be previewed or confirmed with it: a payee or account changed after the code "
                "was typed would be paid. Its declaration needs bind=(...) with the fields that "
                "decide where the money goes, or bind=False with reason='...' (litejobs.E013).",
                code="bulk-binding-missing",
            )

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


# The groups of bulk_money_action()'s validation, in the order it reports problems ------------


def _check_names(what: str, name: Any, queue: Any) -> str:
    """The action's name, and the name of the work queue it acts on."""
    if not isinstance(name, str) or not queues.NAME_PATTERN.match(name):
        raise _invalid(
            what, "give it a name of 1-100 letters, digits or '_.-' (e.g. 'payouts.release')."
        )
    if isinstance(queue, queues.WorkQueue):
        queue = queue.name
    if not isinstance(queue, str) or not queues.NAME_PATTERN.match(queue):
        raise _invalid(what, f"queue= must be a work queue or its name, got {queue!r}.")
    return queue


def _bind_or_reason(
    what: str, bind: Any, reason: Any
) -> tuple[str, ...] | Callable[[Any], Mapping[str, Any]]:
    """What decides where the money goes, or (``bind=False``) why the amount alone does."""
    if bind is not False:
        if reason:
            raise _invalid(what, "reason= goes with bind=False only (why it binds nothing).")
        return _check_bind(what, bind)
    if not isinstance(reason, str) or not reason.strip():
        raise _invalid(
            what,
            "bind=False needs reason='why the amount alone decides where the money goes'; "
            "or bind the fields that decide it, e.g. bind=('payee', 'account').",
        )
    return ()


def _check_texts(what: str, permission: Any, resolution: Any, label: Any, description: Any) -> None:
    """The permission finance needs, the work item's resolution, and what the admin shows."""
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


def bulk_money_action(
    name: str,
    *,
    queue: str | queues.WorkQueue,
    amount: Callable[[Any], Any],
    execute: Callable[[Any, BulkRun], Any],
    permission: str,
    bind: Iterable[str] | Callable[[Any], Mapping[str, Any]] | Literal[False] = (),
    reason: str = "",
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
      before ``execute``: any change refuses the item (``bulk-binding-changed``). An action
      that binds nothing is a check error (``bulk-binding-missing``): a payee changed after
      the code was typed would be paid. Where the amount alone decides (the payee cannot
      change, say), declare ``bind=False`` and say why in ``reason=``.
    - ``execute(row, run)``: moves the money for one row, inside the item's transaction; may
      answer a short note. Make it idempotent on ``run.key`` (refuse to pay twice).
    - ``permission``: ``"app_label.codename"`` a user needs on top of the queue's permission.
    - ``resolution``: how the work item is resolved once its money moved (``"released"``);
      it need not be, and should not be, one of the queue's hand-picked resolutions.
    - ``label`` / ``description``: the button's text and what the preview says will happen.
    """
    what = f"Bulk money action {name!r}"
    queue = _check_names(what, name, queue)
    _check_callable(what, "amount", amount, 1, "amount(row) -> (Decimal, currency)")
    _check_callable(what, "execute", execute, 2, "execute(row, run)")
    checked_bind = _bind_or_reason(what, bind, reason)
    _check_texts(what, permission, resolution, label, description)
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
        bind=checked_bind,
        unbound_reason=reason.strip() if bind is False else "",
        module=module,
    )
    return _actions.register(name, action)


def _check_callable(what: str, option: str, func: Any, arity: int, shape: str) -> None:
    if not callable(func):
        raise _invalid(what, f"{option}= must be a function: {shape}.")
    try:
        inspect.signature(func).bind(*([object()] * arity))
    except (TypeError, ValueError) as error:
        raise _invalid(
            what, f"{option}= must take {arity} positional argument(s): {shape}."
        ) from error


def _check_bind(what: str, bind: Any) -> tuple[str, ...] | Callable[[Any], Mapping[str, Any]]:
    """``bind=`` as the action keeps it: a tuple of names, or a one-argument function."""
    if callable(bind):
        _check_callable(what, "bind", bind, 1, "bind(row) -> {'payee': ..., 'account': ...}")
        bound: Callable[[Any], Mapping[str, Any]] = bind
        return bound
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


def get_action(name: str) -> BulkMoneyAction:
    """The declared action ``name``; ``bulk-action-unknown`` when no installed app declares it."""
    return _actions[name]


def all_actions() -> list[BulkMoneyAction]:
    """Every declared action, by name."""
    return _actions.all()


def actions_for(queue: str) -> list[BulkMoneyAction]:
    """The actions declared on one queue, by name."""
    return [action for action in all_actions() if action.queue_name == queue]


def unregister(name: str) -> None:
    """Forget an action (tests that declare actions on the fly)."""
    _actions.unregister(name)
