"""Bulk money actions' records: what finance confirmed, with which device, and what happened.

A ``BulkAction`` is written once, by a confirmation whose TOTP code verified: who, when, the
device, the digest of the previewed item set and the totals per currency. Its
``BulkActionItem`` rows carry one item each (the work item, the row, the amount confirmed) and
that item's outcome, written by the item's own job in the transaction that moved the money.
Every confirmation attempt, right or wrong, leaves a ``BulkConfirmationAttempt``. Triggers keep
all three honest: a confirmed action and an attempt never change, an item's confirmed amount
and bound values (who gets paid) never change and a succeeded item never leaves
``succeeded``, and none of them is deleted.
"""

import pgtrigger
from django.db import models
from django.db.models import Q

from ..core import times
from ..core.enums import UNFINISHED_BULK_ITEM, BulkItemState
from .people import person
from .trails import no_delete

#: At most one unfinished item per work item: its violation is a coded refusal, not a crash.
UNFINISHED_ITEM_CONSTRAINT = "litejobs_bulkitem_unfinished_once"

_DELETE_PROTECTED = "litejobs: bulk money records are an audit trail and are never deleted"


def _no_delete(name: str) -> pgtrigger.Trigger:
    return no_delete(name, _DELETE_PROTECTED)


class BulkAction(models.Model):
    """One confirmed bulk money action: the audit record of who released what, and when.

    ``totals`` maps each currency to the sum of its items' amounts (as text, exactly). The
    ``digest`` is the sha256 the preview showed and the confirmation was bound to; ``device``
    is the django-otp persistent id of the device whose code confirmed it.
    """

    id = models.BigAutoField(primary_key=True)
    action = models.CharField(max_length=100, help_text="The bulk_money_action's name.")
    queue = models.CharField(max_length=100)
    confirmation = models.UUIDField(
        unique=True, help_text="The preview this confirms: a double submit finds this row."
    )
    user = person()
    username = models.CharField(max_length=150)
    device = models.CharField(max_length=255, help_text="The django-otp device's persistent id.")
    device_name = models.CharField(max_length=64, blank=True, db_default="")
    digest = models.CharField(max_length=64)
    item_count = models.PositiveIntegerField()
    totals = models.JSONField(help_text="Currency -> total of the confirmed amounts (text).")
    confirmed_at = models.DateTimeField()

    class Meta:
        db_table = "litejobs_bulkaction"
        ordering = ["-confirmed_at", "-id"]
        verbose_name = "bulk action"
        verbose_name_plural = "bulk actions"
        indexes = [
            models.Index(fields=["action", "-confirmed_at"], name="litejobs_bulkaction_action"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(item_count__gt=0), name="litejobs_bulkaction_has_items"
            ),
        ]
        triggers = [
            # What was confirmed stays as confirmed (deleting the user may null the user only).
            pgtrigger.ReadOnly(name="litejobs_bulkaction_frozen", exclude=["user"]),
            _no_delete("litejobs_bulkaction_kept"),
        ]

    def __str__(self) -> str:
        return f"bulk action #{self.pk} {self.action} by {self.username}"


class BulkActionItem(models.Model):
    """One item of a confirmed bulk money action and its outcome.

    ``bound`` holds the values the action binds (``bind=``: the payee, the account — whatever
    decides where the money goes) as the preview showed them and the code confirmed them; the
    item executes only while the row still reads the same. ``job_id`` is the job that executes
    it (no foreign key: finished jobs are purged by retention while this record stays).
    ``attempts`` counts the job's attempts that reached an outcome; ``error`` is the last
    failure, ``note`` what the execute callable answered.
    """

    id = models.BigAutoField(primary_key=True)
    bulk_action = models.ForeignKey(BulkAction, on_delete=models.PROTECT, related_name="items")
    work_item_id = models.BigIntegerField(help_text="The work item (litejobs_workitem.id).")
    object_id = models.CharField(max_length=64, help_text="The queue row's primary key.")
    label = models.CharField(max_length=200, help_text="How the row read at confirmation.")
    amount = models.DecimalField(max_digits=24, decimal_places=6)
    currency = models.CharField(max_length=3)
    bound = models.JSONField(
        default=dict,
        blank=True,
        help_text="What decides where the money goes (the action's bind=), as confirmed.",
    )
    state = models.CharField(
        max_length=12, choices=BulkItemState.choices, db_default=BulkItemState.PENDING
    )
    job_id = models.BigIntegerField(null=True, blank=True)
    attempts = models.PositiveIntegerField(db_default=0)
    error = models.TextField(blank=True, db_default="")
    error_code = models.CharField(max_length=100, blank=True, db_default="")
    note = models.CharField(max_length=500, blank=True, db_default="")
    updated_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "litejobs_bulkactionitem"
        ordering = ["bulk_action_id", "id"]
        verbose_name = "bulk action item"
        verbose_name_plural = "bulk action items"
        constraints = [
            # One work item is paid by one unfinished item at a time (the preview leaves busy
            # items out; this holds under races too, and answers "is it being paid?").
            models.UniqueConstraint(
                fields=["work_item_id"],
                name=UNFINISHED_ITEM_CONSTRAINT,
                condition=Q(state__in=UNFINISHED_BULK_ITEM),
            ),
            models.UniqueConstraint(
                fields=["bulk_action", "work_item_id"], name="litejobs_bulkitem_once"
            ),
            models.CheckConstraint(
                condition=Q(state__in=BulkItemState.values), name="litejobs_bulkitem_state_valid"
            ),
            models.CheckConstraint(condition=Q(amount__gt=0), name="litejobs_bulkitem_amount"),
        ]
        triggers = [
            # Money moved once: a succeeded item never goes back; a failed one may be retried.
            pgtrigger.FSM(
                name="litejobs_bulkitem_transitions",
                field="state",
                transitions=[
                    ("pending", "retrying"),
                    ("pending", "succeeded"),
                    ("pending", "failed"),
                    ("retrying", "succeeded"),
                    ("retrying", "failed"),
                    ("failed", "pending"),
                ],
            ),
            # What was confirmed for the item never changes; only its outcome does.
            pgtrigger.ReadOnly(
                name="litejobs_bulkitem_confirmed",
                fields=[
                    "bulk_action",
                    "work_item_id",
                    "object_id",
                    "label",
                    "amount",
                    "currency",
                    "bound",
                ],
            ),
            _no_delete("litejobs_bulkitem_kept"),
        ]

    def __str__(self) -> str:
        return f"bulk action #{self.bulk_action_id} item {self.work_item_id} ({self.state})"


class BulkConfirmationAttempt(models.Model):
    """The audit of one confirmation attempt, right or wrong: who, when, with which device,
    for which preview, and the result (``confirmed``, or the refusal's code). The code typed is
    never stored."""

    id = models.BigAutoField(primary_key=True)
    at = models.DateTimeField()
    user = person()
    username = models.CharField(max_length=150)
    action = models.CharField(max_length=100)
    confirmation = models.UUIDField(null=True, blank=True, help_text="The preview confirmed.")
    device = models.CharField(max_length=255, blank=True, db_default="")
    device_name = models.CharField(max_length=64, blank=True, db_default="")
    result = models.CharField(max_length=40)
    digest = models.CharField(max_length=64, blank=True, db_default="")
    item_count = models.PositiveIntegerField(db_default=0)
    remote_addr = models.GenericIPAddressField(null=True, blank=True)
    bulk_action = models.ForeignKey(
        BulkAction,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="attempts",
    )

    class Meta:
        db_table = "litejobs_bulkconfirmationattempt"
        ordering = ["-at", "-id"]
        verbose_name = "bulk confirmation attempt"
        verbose_name_plural = "bulk confirmation attempts"
        indexes = [
            models.Index(fields=["confirmation"], name="litejobs_bulkattempt_preview"),
            models.Index(fields=["-at"], name="litejobs_bulkattempt_at"),
        ]
        triggers = [
            pgtrigger.ReadOnly(name="litejobs_bulkattempt_frozen", exclude=["user"]),
            _no_delete("litejobs_bulkattempt_kept"),
        ]

    def __str__(self) -> str:
        return f"{self.username} {self.result} {self.action} at {times.when(self.at)}"
