"""The transactional outbox's records: the staged messages.

An ``OutboxMessage`` is written by ``litejobs.outbox.stage()`` in the caller's transaction, so
it exists exactly when the business change that staged it committed. The relay publishes
committed rows in id order and marks them published in the same transaction as the jobs it
creates for them; from then on a row is immutable (a trigger refuses any change but the
retention purge's delete). An insert statement NOTIFYs idle relays at commit.
"""

import pgtrigger
from django.db import models
from django.db.models import Q

from .triggers import notify_per_statement, refuse

__all__ = ["OUTBOX_CHANNEL", "OutboxMessage"]

#: Idle relays LISTEN here; every INSERT statement into the outbox notifies it once.
OUTBOX_CHANNEL = "litejobs_outbox"

_NOTIFY_STAGED = f"""
    IF EXISTS (SELECT 1 FROM staged) THEN
        PERFORM pg_notify('{OUTBOX_CHANNEL}', '');
    END IF;
    RETURN NULL;
"""


class OutboxMessage(models.Model):
    """One staged event: its topic, optional ordering key, tenant and JSON payload."""

    id = models.BigAutoField(primary_key=True)
    topic = models.CharField(max_length=200)
    key = models.CharField(
        max_length=200,
        blank=True,
        db_default="",
        help_text="Ordering key: messages with one key are published in the order staged.",
    )
    tenant = models.CharField(max_length=200, blank=True, db_default="")
    payload = models.JSONField()
    created_at = models.DateTimeField()
    published_at = models.DateTimeField(
        null=True, blank=True, help_text="When the relay created its jobs (empty: pending)."
    )
    relay_fence = models.BigIntegerField(
        null=True, blank=True, help_text="The relay lease's fence when it was published."
    )

    class Meta:
        db_table = "litejobs_outboxmessage"
        ordering = ["-id"]
        verbose_name = "outbox message"
        indexes = [
            # The relay reads pending rows in id order; published rows leave this index.
            models.Index(
                fields=["id"],
                name="litejobs_outbox_pending",
                condition=Q(published_at__isnull=True),
            ),
            models.Index(
                fields=["published_at"],
                name="litejobs_outbox_published",
                condition=Q(published_at__isnull=False),
            ),
        ]
        constraints = [
            models.CheckConstraint(condition=~Q(topic=""), name="litejobs_outbox_topic_not_empty"),
        ]
        triggers = [
            # One NOTIFY per INSERT statement, delivered at commit (never on rollback).
            notify_per_statement(
                "litejobs_outbox_notify_staged", pgtrigger.Insert, _NOTIFY_STAGED, new="staged"
            ),
            # A message is what was staged: only the relay's mark may change a row, once.
            refuse(
                "litejobs_outbox_immutable",
                pgtrigger.Update,
                "litejobs: outbox message % is immutable (published messages change only by the "
                "retention purge)",
                "OLD.id",
                condition="OLD.published_at IS NOT NULL OR NEW.topic IS DISTINCT FROM OLD.topic "
                "OR NEW.key IS DISTINCT FROM OLD.key OR NEW.tenant IS DISTINCT FROM OLD.tenant "
                "OR NEW.payload IS DISTINCT FROM OLD.payload "
                "OR NEW.created_at IS DISTINCT FROM OLD.created_at",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.topic} #{self.id}"

    @property
    def state(self) -> str:
        """``pending`` until the relay published it, then ``published``."""
        return "pending" if self.published_at is None else "published"
