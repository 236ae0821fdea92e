"""The preview: every ticked item with its amount and what it binds, the totals per currency,
and a digest a confirmation is bound to; it executes nothing."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, cast

from django.core import signing

from ..core import clock
from ..core.enums import FINISHED_ITEM, UNFINISHED_BULK_ITEM, WorkItemState
from ..exceptions import InvalidInput, LitejobsError
from ..models import BulkActionItem, WorkItem
from ..workqueues import acting, listing
from ..workqueues.declarations import WorkQueue
from . import devices
from .declarations import BulkMoneyAction, database_alias, get_action
from .errors import BulkRefused

#: Items one bulk money action may cover (the work-queue admin's selection limit).
ACTION_LIMIT = acting.ACT_LIMIT
#: How long a preview may be confirmed: after that the set is read again.
PREVIEW_LIFETIME = timedelta(minutes=15)
_SALT = "litejobs.bulk.preview"
_DIGEST_VERSION = "litejobs.bulk.v2"


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

    Refused before reading anything when the user may not run the action, the action binds
    nothing (``bulk-binding-missing``) or the user has no confirmed TOTP device (the action is
    unavailable without one). A ticked item is left out — listed
    in ``excluded`` with the reason — when it is no longer in the queue, someone else holds a
    live claim on it, the queue requires a claim the user does not hold, its row is gone, or a
    confirmed bulk action is already executing it.
    """
    action = action if isinstance(action, BulkMoneyAction) else get_action(action)
    devices.confirming_device(action, user, device)
    return read(action, _selection(item_ids), user)


def read(action: BulkMoneyAction, selection: tuple[int, ...], user: Any) -> Preview:
    queue = action.queue()
    now = clock.now()
    items = {
        item.pk: item
        for item in WorkItem.objects.using(database_alias()).filter(
            queue=queue.name, pk__in=selection
        )
    }
    busy = dict(
        BulkActionItem.objects.using(database_alias())
        .filter(work_item_id__in=list(items), state__in=UNFINISHED_BULK_ITEM)
        .values_list("work_item_id", "bulk_action_id")
    )
    rows = listing.targets(queue, list(items.values()))
    lines: list[PreviewLine] = []
    excluded: list[Excluded] = []
    for item_id in selection:
        item = items.get(item_id)
        reason = _exclusion(queue, item, item_id, busy, rows, user, now)
        if reason is not None:
            excluded.append(Excluded(item_id, *reason))
            continue
        object_id = cast(WorkItem, item).object_id  # _exclusion excluded a missing item
        row = rows[object_id]
        amount, currency = action.amount_of(row)
        bound = tuple(action.bound_of(row).items())
        lines.append(PreviewLine(item_id, object_id, str(row)[:200], amount, currency, bound))
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


def _exclusion(
    queue: WorkQueue,
    item: WorkItem | None,
    item_id: int,
    busy: Mapping[int, Any],
    rows: Mapping[str, Any],
    user: Any,
    now: datetime,
) -> tuple[str, str] | None:
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
    held = item.state == WorkItemState.CLAIMED and cast(datetime, item.claim_expires_at) > now
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


def read_token(token: Any, user: Any) -> dict[str, Any]:
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
        data = read_token(token, user)
        action = get_action(data["a"])
    except LitejobsError:
        return None
    fresh = read(action, tuple(data["i"]), user)
    if fresh.digest != data["d"]:
        return fresh
    return replace(fresh, confirmation=data["n"], created_at=data["t"], token=str(token))
