"""How the work-queue commands address and read their items: a statement's rows as items,
an item's queue and id, who acts (the queue's permission), and why a conditional statement
changed nothing, read from the row as it is now (``ClaimRefused``, ``WorkItemNotFound``)."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any, cast

from django.db import connections

from ..conf import settings
from ..core import times
from ..core.enums import FINISHED_ITEM, WorkItemState
from ..exceptions import InvalidInput, LitejobsError
from ..models.workqueues import WorkItem
from ..sql.cursors import fetch_all, run_query
from . import declarations as queues
from .errors import ClaimRefused, WorkItemNotFound, WorkQueueForbidden

#: The commands' logger: an item's refusals are lines of its story with its claims.
logger = logging.getLogger("litejobs.workqueues.commands")


def _alias() -> str:
    return settings.DATABASE


def run_items(name: str, params: dict[str, Any]) -> list[WorkItem]:
    """Run the named statement of ``workqueues.sql``; answers the items it returned."""
    with connections[_alias()].cursor() as cursor:
        run_query(cursor, name, params)
        return [item_of(found) for found in fetch_all(cursor)]


def item_of(found: dict[str, Any]) -> WorkItem:
    """A WorkItem from a ``RETURNING *`` row (by column name), with the field converters the
    ORM would apply; ``created`` is set when the statement says whether it inserted."""
    connection = connections[_alias()]
    fields = WorkItem._meta.concrete_fields
    values = []
    for field in fields:
        value = found[cast(str, field.column)]  # concrete fields have columns
        convert = getattr(field, "from_db_value", None)
        values.append(convert(value, None, connection) if convert and value is not None else value)
    item = WorkItem.from_db(_alias(), [f.attname for f in fields], values)
    if "inserted" in found:
        item.created = bool(found["inserted"])
    return item


def name_of(user: Any) -> str:
    name = user.get_username() if hasattr(user, "get_username") else ""
    return (name or f"user:{user.pk}")[:150]


def check_user(queue: queues.WorkQueue, user: Any, verb: str) -> None:
    if user is None or getattr(user, "pk", None) is None:
        raise InvalidInput(
            f"Say who {verb}s: pass user= (the admin passes the signed-in user).",
            code="user-missing",
        )
    if not queue.allows(user):
        logger.info("item %s forbidden queue=%s user=%s", verb, queue.name, name_of(user))
        raise WorkQueueForbidden(
            f"You may not work queue {queue.name!r}: it needs the permission "
            f"{queue.permission!r}. Ask an administrator to grant it (directly or via a group)."
        )


def queue_and_id(item: WorkItem | int, queue: str | None) -> tuple[queues.WorkQueue, int]:
    """The declared queue of ``item`` and its id (one read when only an id is given)."""
    if isinstance(item, WorkItem):
        if queue is not None and item.queue != queue:
            raise not_found(item.pk, queue)
        return queues.get(item.queue), item.pk
    if isinstance(item, bool) or not isinstance(item, int):
        try:
            item = int(item)
        except (TypeError, ValueError):
            raise InvalidInput(
                f"A work item is a WorkItem or its id (a whole number), not {item!r}.",
                code="item-invalid",
            ) from None
    if queue is None:
        queue = (
            WorkItem.objects.using(_alias()).filter(pk=item).values_list("queue", flat=True).first()
        )
        if queue is None:
            raise not_found(item, None)
    return queues.get(queue), item


def not_found(item_id: int, queue: str | None) -> WorkItemNotFound:
    where = f"in queue {queue!r}" if queue else "in any queue"
    return WorkItemNotFound(
        f"No work item #{item_id} {where}: it was never enqueued there, or was purged. Reload "
        "the queue page for the current items."
    )


def when(instant: datetime | None) -> str:
    return times.when(instant)


def check_claims_enabled(work_queue: queues.WorkQueue, verb: str) -> None:
    if not work_queue.claims_enabled:
        raise ClaimRefused(
            f'Work queue {work_queue.name!r} has claims disabled (claim="disabled"): there is '
            f"nothing to {verb}; resolve items directly.",
            code="claim-disabled",
        )


def closed(row: WorkItem, work_queue: queues.WorkQueue) -> ClaimRefused:
    if row.state == WorkItemState.DONE:
        what = f"already done ({work_queue.resolution_label(row.resolution)})"
    else:
        what = "cancelled"
    return ClaimRefused(
        f"Item #{row.pk} is {what} by {row.resolved_by_name or '?'} at {when(row.resolved_at)}; "
        "nothing more to do: pick another item.",
        code="item-closed",
    )


def explain(
    work_queue: queues.WorkQueue, item_id: int, user: Any, verb: str, now: datetime
) -> LitejobsError:
    """Why a conditional statement changed nothing, read from the row as it is now."""
    row = WorkItem.objects.using(_alias()).filter(pk=item_id, queue=work_queue.name).first()
    if row is None:
        return not_found(item_id, work_queue.name)
    if row.state in FINISHED_ITEM:
        return closed(row, work_queue)
    held = row.state == WorkItemState.CLAIMED and cast(datetime, row.claim_expires_at) > now
    mine = held and user is not None and row.claimed_by_id == user.pk
    if held and not mine:
        logger.info(
            "item %s refused id=%s queue=%s holder=%s",
            verb,
            item_id,
            work_queue.name,
            row.claimed_by_name,
        )
        return ClaimRefused(
            f"Item #{item_id} is held by {row.claimed_by_name or 'a deleted user'} until "
            f"{when(row.claim_expires_at)}: pick another item, or wait until they release it "
            "or the claim expires.",
            code="claim-held",
        )
    if verb == "release":
        state = (
            f"your claim expired at {when(row.claim_expires_at)} and it is back in the queue"
            if row.state == WorkItemState.CLAIMED and row.claimed_by_id == getattr(user, "pk", None)
            else "it is open"
        )
        return ClaimRefused(
            f"You hold no claim on item #{item_id} ({state}); there is nothing to release.",
            code="claim-not-held",
        )
    if work_queue.claims_required and not mine:
        expired = (
            f" (your claim expired at {when(row.claim_expires_at)})"
            if row.state == WorkItemState.CLAIMED and row.claimed_by_id == getattr(user, "pk", None)
            else ""
        )
        return ClaimRefused(
            f"Work queue {work_queue.name!r} requires a claim before any action: claim item "
            f"#{item_id} first{expired}, then {verb} it.",
            code="claim-required",
        )
    return ClaimRefused(
        f"Item #{item_id} changed while you acted; reload the queue and try again.",
        code="item-changed",
    )
