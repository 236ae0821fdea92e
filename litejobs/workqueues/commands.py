"""Human work queues: the commands that move an item, shared by the admin and user code.

``enqueue_item`` puts a model row in a queue (or refreshes its score), ``claim`` /
``claim_next`` / ``release`` / ``resolve`` / ``cancel`` move an item, ``refresh_score``
re-runs its rule, and ``settle`` resolves one on an authority checked elsewhere (``act``,
in ``acting``, applies one of them to many items). Each is **one conditional statement**: it
changes the row only when the queue's claim mode and the item's current claim allow it, and
otherwise changes nothing and raises ``ClaimRefused`` (or ``WorkItemNotFound``) saying why and
what to do. Two people can never both hold one item: a claim is one ``UPDATE ... WHERE`` that
PostgreSQL re-checks on the row's latest version under its row lock.

A claim is a lease. Every statement compares ``claim_expires_at`` with the database's clock
(``{db_now}``: ``litejobs.core.clock.lease_instant()``, so web hosts whose clocks disagree agree
on who holds an item) inside its ``WHERE``, so an expired claim is the same as no claim
everywhere — listings, actions, this API — without a sweeper. Actions taken for a person
(``user=``) check the queue's permission first (``WorkQueueForbidden``).
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any, cast

from django.contrib.contenttypes.models import ContentType
from django.db import models

from ..conf import settings
from ..core import clock
from ..core.durations import parse_duration
from ..core.enums import FINISHED_ITEM, ClaimMode, WorkItemState
from ..exceptions import InvalidInput, LitejobsError
from ..models.workqueues import WorkItem
from . import declarations as queues
from .items import (
    check_claims_enabled,
    check_user,
    closed,
    explain,
    name_of,
    not_found,
    queue_and_id,
    run_items,
)

__all__ = [
    "cancel",
    "claim",
    "claim_next",
    "enqueue_item",
    "refresh_score",
    "release",
    "resolve",
    "settle",
]

logger = logging.getLogger(__name__)


def _alias() -> str:
    return settings.DATABASE


# Enqueue and score ---------------------------------------------------------------------------


def enqueue_item(queue: str | queues.WorkQueue, row: models.Model, *, tenant: str = "") -> WorkItem:
    """Put ``row`` in ``queue``, scored by the queue's rule; answers the live item.

    A row has at most one live item per queue: enqueueing it again refreshes that item's
    score (and keeps its claim). Joins the caller's transaction, so an item commits with the
    row change that called for it. ``item.created`` says whether it is new.
    """
    queue = queue if isinstance(queue, queues.WorkQueue) else queues.get(queue)
    _check_row(queue, row)
    if not isinstance(tenant, str) or len(tenant) > 200:
        raise InvalidInput(
            "tenant= must be a string of at most 200 characters.", code="tenant-invalid"
        )
    score, inputs, rule = queue.score_of(row)
    now = clock.now()
    [item] = run_items(
        "workitem_enqueue",
        {
            "queue": queue.name,
            "content_type": ContentType.objects.db_manager(_alias()).get_for_model(row).pk,
            "object_id": str(row.pk),
            "tenant": tenant,
            "score": score,
            "inputs": json.dumps(inputs),
            "rule": rule,
            "now": now,
        },
    )
    logger.debug(  # a backfill enqueues thousands; claims and resolutions are the story
        "item %s id=%s queue=%s score=%s",
        "enqueued" if item.created else "rescored",
        item.pk,
        queue.name,
        score,
    )
    return item


def _check_row(queue: queues.WorkQueue, row: Any) -> None:
    if not isinstance(row, queue.model):
        raise InvalidInput(
            f"Work queue {queue.name!r} holds {queue.model._meta.label} rows, not "
            f"{type(row).__name__}; enqueue one of those.",
            code="item-target-invalid",
        )
    if row.pk is None:
        raise InvalidInput(
            f"Save the {queue.model._meta.label} row before enqueueing it (it has no primary key).",
            code="item-target-invalid",
        )
    if len(str(row.pk)) > 64:
        raise InvalidInput(
            f"{queue.model._meta.label} primary keys longer than 64 characters cannot be queued.",
            code="item-target-invalid",
        )


def refresh_score(item: WorkItem | int, *, queue: str | None = None) -> WorkItem:
    """Re-run the queue's rule on the item's row (ages grow, evidence arrives).

    Only live items are rescored; a finished item keeps the score it was worked at. Refused
    (``item-target-missing``) when the row was deleted: cancel the item instead.
    """
    work_queue, item_id = queue_and_id(item, queue)
    current = WorkItem.objects.using(_alias()).filter(pk=item_id, queue=work_queue.name).first()
    if current is None:
        raise not_found(item_id, work_queue.name)
    if current.state in FINISHED_ITEM:
        raise closed(current, work_queue)
    row = work_queue.model._default_manager.using(_alias()).filter(pk=current.object_id).first()
    if row is None:
        raise LitejobsError(
            f"Item #{item_id}'s {work_queue.model._meta.label} row {current.object_id} no longer "
            "exists; cancel the item (workqueues.cancel) instead of rescoring it.",
            code="item-target-missing",
        )
    score, inputs, rule = work_queue.score_of(row)
    rows = run_items(
        "workitem_rescore",
        {
            "id": item_id,
            "queue": work_queue.name,
            "score": score,
            "inputs": json.dumps(inputs),
            "rule": rule,
            "now": clock.now(),
        },
    )
    if not rows:  # finished between the read and the update
        raise explain(work_queue, item_id, None, "rescore", clock.now())
    return rows[0]


# Claims --------------------------------------------------------------------------------------


def claim(
    item: WorkItem | int, user: Any, *, queue: str | None = None, lease: Any = None
) -> WorkItem:
    """Claim an item for ``user`` until its queue's ``claim_lease`` (or ``lease``) passes.

    Granted when nobody holds a live claim; claiming an item you hold renews the claim.
    Refused: ``claim-disabled`` (the queue has no claims), ``claim-held`` (someone else holds
    it; the message says who and until when), ``item-closed``.
    """
    work_queue, item_id = queue_and_id(item, queue)
    check_user(work_queue, user, "claim")
    check_claims_enabled(work_queue, "claim")
    now = clock.now()
    duration = (
        work_queue.claim_lease
        if lease is None
        else parse_duration(lease, name="lease=", allow_zero=False)
    )
    rows = run_items(
        "workitem_claim",
        {
            "id": item_id,
            "queue": work_queue.name,
            "user_id": user.pk,
            "user_name": name_of(user),
            "now": now,
            "lease": duration,
            "db_now": clock.lease_instant(),
        },
    )
    if not rows:
        raise explain(work_queue, item_id, user, "claim", clock.database_now(_alias()))
    claimed = rows[0]
    logger.info(
        "item claimed id=%s queue=%s by=%s until=%s",
        item_id,
        work_queue.name,
        claimed.claimed_by_name,
        cast(datetime, claimed.claim_expires_at).isoformat(),  # a claim has its expiry
    )
    return claimed


def claim_next(queue: str, user: Any, *, tenant: str | None = None) -> WorkItem | None:
    """Claim the first unclaimed item in listing order (score, then age) for ``user``.

    Two people asking at once get two different items (``FOR UPDATE SKIP LOCKED``). Answers
    ``None`` when no item is left unclaimed.
    """
    work_queue = queues.get(queue)
    check_user(work_queue, user, "claim")
    check_claims_enabled(work_queue, "claim")
    now = clock.now()
    rows = run_items(
        "workitem_claim_next",
        {
            "queue": work_queue.name,
            "user_id": user.pk,
            "user_name": name_of(user),
            "now": now,
            "lease": work_queue.claim_lease,
            "db_now": clock.lease_instant(),
            "tenant": tenant,
        },
    )
    if not rows:
        return None
    claimed = rows[0]
    logger.info(
        "item claimed id=%s queue=%s by=%s until=%s next=1",
        claimed.pk,
        work_queue.name,
        claimed.claimed_by_name,
        cast(datetime, claimed.claim_expires_at).isoformat(),  # a claim has its expiry
    )
    return claimed


def release(item: WorkItem | int, user: Any, *, queue: str | None = None) -> WorkItem:
    """Give up ``user``'s live claim: the item is open to everyone at once.

    Refused: ``claim-not-held`` (no live claim of yours: none, expired, or someone else's),
    ``claim-disabled``, ``item-closed``.
    """
    work_queue, item_id = queue_and_id(item, queue)
    check_user(work_queue, user, "release")
    check_claims_enabled(work_queue, "release")
    rows = run_items(
        "workitem_release",
        {
            "id": item_id,
            "queue": work_queue.name,
            "user_id": user.pk,
            "db_now": clock.lease_instant(),
        },
    )
    if not rows:
        raise explain(work_queue, item_id, user, "release", clock.database_now(_alias()))
    logger.info("item released id=%s queue=%s by=%s", item_id, work_queue.name, name_of(user))
    return rows[0]


def resolve(
    item: WorkItem | int,
    user: Any,
    resolution: str | None = None,
    *,
    note: str = "",
    queue: str | None = None,
) -> WorkItem:
    """Mark an item done with one of its queue's resolutions, by ``user``.

    ``required`` queues accept it only from the holder of a live claim (``claim-required``);
    ``optional`` ones from anyone unless someone else holds a live claim (``claim-held``);
    ``disabled`` ones from anyone with the permission. A second resolution is refused
    (``item-closed``, naming who resolved it).
    """
    work_queue, item_id = queue_and_id(item, queue)
    resolution = work_queue.check_resolution(resolution)
    check_user(work_queue, user, "resolve")
    return _finish(work_queue, item_id, user, WorkItemState.DONE, resolution, note, "resolve")


def cancel(
    item: WorkItem | int, *, reason: str, user: Any = None, queue: str | None = None
) -> WorkItem:
    """Take an item out of its queue without working it (its row went away, or was handled
    elsewhere), with a reason.

    With ``user=`` it is that person's action and follows the claim mode like ``resolve``;
    without, it is your code's and applies whatever the claim.
    """
    work_queue, item_id = queue_and_id(item, queue)
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidInput(
            "Say why the item is cancelled: reason= is kept on the item.", code="reason-required"
        )
    if user is not None:
        check_user(work_queue, user, "cancel")
    return _finish(
        work_queue, item_id, user, WorkItemState.CANCELLED, "", reason.strip()[:2000], "cancel"
    )


def settle(
    item: WorkItem | int,
    *,
    resolution: str,
    user_id: int | None,
    user_name: str,
    note: str = "",
    queue: str | None = None,
) -> WorkItem:
    """Resolve an item for a person on an authority checked elsewhere: a bulk money action
    whose confirmation (permission, preview, TOTP code) already passed.

    The resolver recorded is that person (``user_id`` and ``user_name``, kept even if the user
    is deleted later); the resolution need not be one staff may pick by hand (money-moving
    resolutions belong to the confirmed action only). Refused like any action when the item is
    finished (``item-closed``) or **someone else** holds a live claim on it (``claim-held``):
    nobody acts through another person's hold. Joins the caller's transaction.
    """
    work_queue, item_id = queue_and_id(item, queue)
    return _finish(
        work_queue,
        item_id,
        None,
        WorkItemState.DONE,
        resolution,
        note,
        "resolve",
        claim=ClaimMode.OPTIONAL,
        acting=(user_id, (user_name or f"user:{user_id}")[:150]),
    )


def _finish(
    work_queue: queues.WorkQueue,
    item_id: int,
    user: Any,
    state: str,
    resolution: str,
    note: str,
    verb: str,
    *,
    claim: str | None = None,
    acting: tuple[int | None, str] | None = None,
) -> WorkItem:
    if not isinstance(note, str):
        raise InvalidInput("note= must be text.", code="note-invalid")
    now = clock.now()
    mode = claim if claim is not None else (None if user is None else work_queue.claim)
    if acting is not None:
        user_id, user_name = acting
    else:
        user_id = None if user is None else user.pk
        user_name = "(code)" if user is None else name_of(user)
    rows = run_items(
        "workitem_finish",
        {
            "claim": mode,
            "id": item_id,
            "queue": work_queue.name,
            "state": state,
            "resolution": resolution,
            "note": note[:2000],
            "user_id": user_id,
            "user_name": user_name,
            "now": now,
            "db_now": clock.lease_instant(),
        },
    )
    if not rows:
        raise explain(work_queue, item_id, user, verb, clock.database_now(_alias()))
    finished = rows[0]
    logger.info(
        "item %s id=%s queue=%s resolution=%s by=%s",
        "resolved" if state == WorkItemState.DONE else "cancelled",
        item_id,
        work_queue.name,
        resolution or "-",
        finished.resolved_by_name,
    )
    return finished
