"""Bulk money actions, executed: one job per confirmed item, each run once.

Each job runs its item in its own atomic block: lock the item's record (only a pending or
retrying item executes), lock the row and check it still reads the confirmed amount and bound
values, resolve its work item, call ``execute``, record the outcome — all or nothing, so a
replay, a double submit or a worker killed mid-batch moves no money twice, and a payee changed
after the code was typed is never paid. A failed item keeps its error and can be retried
alone (``retry_item``, which needs the action's permission; the generic job retry refuses
these jobs, through the guard registered below).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count

from ..core import clock
from ..core.enums import CLAIM_GONE, UNFINISHED_BULK_ITEM, BulkItemState, BulkStatus, CancelReason
from ..core.retry import Retry
from ..exceptions import JobNotFound, LitejobsError, TransitionRefused
from ..jobs import operations
from ..jobs.context import JobContext
from ..jobs.declarations import job
from ..models import UNFINISHED_ITEM_CONSTRAINT, BulkAction, BulkActionItem
from ..models.jobs import BULK_ITEM_JOB
from ..workqueues import commands as workqueues
from . import devices
from .declarations import BulkMoneyAction, BulkRun, database_alias, get_action
from .errors import BulkRefused, ItemNotPending
from .preview import money

logger = logging.getLogger(__name__)

#: The job that executes one item of a confirmed bulk money action (declared below; a job that
#: ends cancelled or dead leaves its unfinished item failed: ``litejobs.models.jobs``).
ITEM_JOB = BULK_ITEM_JOB
ITEM_QUEUE = "bulk"


def violates(error: IntegrityError, constraint: str) -> bool:
    """Whether ``error`` is a violation of the named constraint."""
    diag = getattr(error.__cause__, "diag", None)
    name = getattr(diag, "constraint_name", None)
    return name == constraint or (name is None and constraint in str(error))


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
def run_bulk_item(
    ctx: JobContext, action: str, item: int, confirmation: int, entry: int
) -> dict[str, Any]:
    """Execute one item of a confirmed bulk money action, once.

    One transaction: lock the item's record (a second run of the same key waits here, then
    finds it succeeded and does nothing; only a pending or retrying item goes on — a failed
    one runs again only through ``retry_item``), lock the row and check it still reads the
    confirmed amount and bound values, resolve the work item for the confirming user, call
    ``execute``, record ``succeeded``. Any error rolls all of it back; the failure is then
    recorded on the item (``retrying`` or ``failed`` with the error) and the job fails or
    retries as its policy says.
    """
    alias = database_alias()
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
                raise _not_pending(record)
            return _execute_item(ctx, get_action(action), record)
    except ItemNotPending:
        raise  # the item's own record (its state and error) stays as it is
    except Exception as error:
        if ctx.cancel_reason not in (CancelReason.DRAIN, *CLAIM_GONE):
            _record_failure(ctx, entry, error)
        raise


def _not_pending(record: BulkActionItem) -> ItemNotPending:
    return ItemNotPending(
        f"Item #{record.work_item_id} of bulk action #{record.bulk_action_id} is "
        f"{record.get_state_display().lower()}, so its job executed nothing: only a pending "
        "or retrying item executes. Retry a failed item from its bulk action's page in the "
        "admin (Bulk actions), which needs the action's permission."
    )


def _execute_item(
    ctx: JobContext, action: BulkMoneyAction, record: BulkActionItem
) -> dict[str, Any]:
    queue = action.queue()
    bulk = record.bulk_action
    try:
        key = queue.model._meta.pk.to_python(record.object_id)
    except (ValidationError, ValueError, TypeError):  # not a key of this model: no row
        key = None
    rows = queue.model._default_manager.using(database_alias()).select_for_update(of=("self",))
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
        using=database_alias(),
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


def _record_failure(ctx: JobContext, entry: int, error: BaseException) -> None:
    final = ctx.final_attempt or run_bulk_item.retry.gives_up_on(error)
    # The code has its own column: the message is the sentence finance staff read.
    message = (
        error.args[0] if isinstance(error, LitejobsError) else f"{type(error).__name__}: {error}"
    )
    code = getattr(error, "code", "") or f"{type(error).__module__}.{type(error).__qualname__}"
    now = clock.now()
    try:
        with transaction.atomic(using=database_alias()):
            BulkActionItem.objects.using(database_alias()).filter(pk=entry).exclude(
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


@dataclass(frozen=True)
class Summary:
    """How a bulk action's items stand: counts per state and the overall status."""

    pending: int
    retrying: int
    succeeded: int
    failed: int

    @property
    def status(self) -> BulkStatus:
        """``executing``, ``succeeded`` (every item), or ``failed`` (some items failed)."""
        if self.pending or self.retrying:
            return BulkStatus.EXECUTING
        return BulkStatus.FAILED if self.failed else BulkStatus.SUCCEEDED


def summary(bulk_action: BulkAction | int) -> Summary:
    """Counts of the action's items per outcome (one query)."""
    pk = bulk_action.pk if isinstance(bulk_action, BulkAction) else int(bulk_action)
    counts = dict.fromkeys(BulkItemState.values, 0)
    for state, n in (
        BulkActionItem.objects.using(database_alias())
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
    (``litejobs.jobs.operations.requeue``; the generic job retry refuses bulk items), or enqueues it
    again under the same key if the job was purged.
    """
    pk = entry.pk if isinstance(entry, BulkActionItem) else int(entry)
    record = (
        BulkActionItem.objects.using(database_alias())
        .select_related("bulk_action")
        .filter(pk=pk)
        .first()
    )
    if record is None:
        raise BulkRefused(f"No bulk action item #{pk}.", code="bulk-item-not-failed")
    action = get_action(record.bulk_action.action)
    devices.check_user(action, user)
    by = devices.username(user)
    try:
        with transaction.atomic(using=database_alias()):
            locked, job_id = _send_back(action, pk, record, by)
    except IntegrityError as error:
        if not violates(error, UNFINISHED_ITEM_CONSTRAINT):
            raise
        other = (
            BulkActionItem.objects.using(database_alias())
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


def _send_back(
    action: BulkMoneyAction, pk: int, record: BulkActionItem, by: str
) -> tuple[BulkActionItem, int]:
    """Mark the failed item pending and its job ready again (the caller's transaction)."""
    locked = BulkActionItem.objects.using(database_alias()).select_for_update().get(pk=pk)
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
    locked.save(
        using=database_alias(), update_fields=["state", "job_id", "finished_at", "updated_at"]
    )
    return locked, job_id
