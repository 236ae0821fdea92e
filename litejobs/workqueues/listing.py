"""Human work queues: what a person sees, read in pages.

``items`` is a listing view's queryset in its order, ``page`` one page of it after a keyset
position (``position_after``: each page is one index range scan, no OFFSET), ``count`` its
size up to a cap, ``status`` how a person sees one item, ``targets`` the model rows behind a page,
and ``snapshot`` / ``as_event`` the items as the live pages redraw them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import BooleanField, F, Q, QuerySet
from django.db.models.expressions import RawSQL

from ..conf import settings
from ..core import clock
from ..core.enums import (
    FINISHED_ITEM,
    LIVE_ITEM,
    ItemStatus,
    ItemView,
    WorkItemState,
    values_of,
)
from ..exceptions import InvalidInput
from ..models.workqueues import WorkItem
from . import declarations as queues

__all__ = ["VIEWS", "Page", "count", "items", "page", "snapshot", "status"]

#: Largest page a listing answers.
MAX_PAGE = 200
#: Listings count at most this many rows (a count of 100,000 rows is not worth its cost).
COUNT_CAP = 10_000

#: The listing views: items to work (everyone's), unclaimed ones, mine, held by others, closed.
VIEWS = values_of(ItemView)


def status(item: WorkItem, user: Any, now: datetime) -> ItemStatus:
    """How ``user`` sees the item now: ``open``, ``mine``, ``theirs``, ``done``, ``cancelled``.

    A claim whose expiry has passed is no claim: such an item is ``open``.
    """
    if item.state in FINISHED_ITEM:
        return ItemStatus(item.state)
    if item.state == WorkItemState.CLAIMED and cast(datetime, item.claim_expires_at) > now:
        mine = user is not None and item.claimed_by_id == user.pk
        return ItemStatus.MINE if mine else ItemStatus.THEIRS
    return ItemStatus.OPEN


@dataclass(frozen=True)
class Page:
    """One page of a listing and the position the next starts after (``None`` on the last
    page; ``next_cursor`` is its released name)."""

    items: list[WorkItem]
    next_cursor: str | None


def items(
    queue: str,
    *,
    user: Any = None,
    view: str = "todo",
    tenant: str | None = None,
    now: datetime | None = None,
) -> QuerySet[WorkItem]:
    """The queryset of a listing view, in its order (see ``page``).

    ``todo``: every live item by score then age; ``unclaimed``: those without a live claim;
    ``mine`` / ``others``: live claims of ``user`` / of anyone else; ``closed``: done and
    cancelled items, newest first.
    """
    if view not in VIEWS:
        raise InvalidInput(
            f"Unknown view {view!r}; use one of {', '.join(VIEWS)}.", code="view-invalid"
        )
    now = now or clock.now()
    qs = WorkItem.objects.using(settings.DATABASE).filter(queue=queue)
    if tenant:
        qs = qs.filter(tenant=tenant)
    if view == ItemView.CLOSED:
        return qs.filter(state__in=FINISHED_ITEM).order_by(F("resolved_at").desc(), F("id").desc())
    qs = qs.filter(state__in=LIVE_ITEM)
    held = Q(state=WorkItemState.CLAIMED, claim_expires_at__gt=now)
    user_id = getattr(user, "pk", None)
    if view == ItemView.UNCLAIMED:
        qs = qs.exclude(held)
    elif view == ItemView.MINE:
        qs = qs.filter(held, claimed_by_id=user_id)
    elif view == ItemView.OTHERS:
        qs = qs.filter(held).exclude(claimed_by_id=user_id) if user_id else qs.filter(held)
    return qs.order_by((-F("score")).asc(), F("created_at").asc(), F("id").asc())


def page(
    queue: str,
    *,
    user: Any = None,
    view: str = "todo",
    tenant: str | None = None,
    after: str | None = None,
    limit: int = 50,
    now: datetime | None = None,
) -> Page:
    """A page of a listing after the position ``after`` (keyset pagination).

    Each page is one index range scan that starts where the previous page ended, so the
    2,000th page of 100,000 items costs what the first does (no OFFSET).
    """
    if not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidInput(f"A page holds 1 to {MAX_PAGE} items.", code="page-invalid")
    qs = items(queue, user=user, view=view, tenant=tenant, now=now)
    if after:
        qs = qs.filter(_after(view, after))
    rows = list(qs[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    return Page(rows, position_after(rows[-1], view) if more and rows else None)


def position_after(item: WorkItem, view: str) -> str:
    """The position just after ``item`` in ``view``'s order, as text for a URL."""
    if view == ItemView.CLOSED:
        return f"{cast(datetime, item.resolved_at).isoformat()}_{item.pk}"  # closed: resolved
    return f"{item.score!r}_{item.created_at.isoformat()}_{item.pk}"


def _after(view: str, position: str) -> RawSQL:
    try:
        if view == ItemView.CLOSED:
            resolved_at, item_id = position.split("_")
            return RawSQL(
                '("litejobs_workitem"."resolved_at", "litejobs_workitem"."id") < (%s, %s)',
                (datetime.fromisoformat(resolved_at), int(item_id)),
                output_field=BooleanField(),
            )
        score, created_at, item_id = position.split("_")
        return RawSQL(
            '("litejobs_workitem"."score" * -1, "litejobs_workitem"."created_at", '
            '"litejobs_workitem"."id") > (%s, %s, %s)',
            (-float(score), datetime.fromisoformat(created_at), int(item_id)),
            output_field=BooleanField(),
        )
    except (ValueError, TypeError) as error:
        raise InvalidInput(
            "That page link is broken (its position cannot be read); start from the first page.",
            code="cursor-invalid",
        ) from error


def count(queue: str, **filters: Any) -> tuple[int, bool]:
    """How many items a listing view holds, counted up to ``COUNT_CAP``: ``(n, capped)``."""
    counted = items(queue, **filters).order_by()[: COUNT_CAP + 1].count()
    return min(counted, COUNT_CAP), counted > COUNT_CAP


def targets(work_queue: queues.WorkQueue, rows: Sequence[WorkItem]) -> dict[str, models.Model]:
    """The model rows behind ``rows``, by ``object_id``, in one query."""
    ids = {row.object_id for row in rows}
    if not ids:
        return {}
    pk = work_queue.model._meta.pk
    keys = []
    for value in ids:
        try:
            keys.append(pk.to_python(value))
        except ValidationError:  # not a key of this model (the queue's model changed): no row
            continue
    found = work_queue.model._default_manager.using(settings.DATABASE).filter(pk__in=keys)
    return {str(row.pk): row for row in found}


def snapshot(queue: str, item_ids: Iterable[int]) -> list[dict[str, Any]]:
    """The claim state of these items, shaped like the live notifications (one query)."""
    ids = [int(i) for i in list(item_ids)[:MAX_PAGE]]
    rows = WorkItem.objects.using(settings.DATABASE).filter(queue=queue, pk__in=ids)
    return [as_event(row) for row in rows]


def as_event(row: WorkItem) -> dict[str, Any]:
    """An item as a queue page redraws it (the NOTIFY trigger sends the same keys)."""
    return {
        "op": "state",
        "id": row.pk,
        "queue": row.queue,
        "state": row.state,
        "holder_id": row.claimed_by_id,
        "holder": row.claimed_by_name,
        "claim_expires_at": row.claim_expires_at.isoformat() if row.claim_expires_at else None,
        "resolution": row.resolution,
        "resolver": row.resolved_by_name,
    }
