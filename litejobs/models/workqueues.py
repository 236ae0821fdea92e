"""Human work queues' records: one ``WorkItem`` per model row waiting for a person.

The claim is a lease (holder + expiry): an item whose ``claim_expires_at`` has passed is
unclaimed everywhere — listings, actions, the API — even while its row still says
``claimed``, so no sweeper is needed for correctness. Every change is one conditional
statement in ``litejobs.workqueues``; the triggers below keep the states honest and tell
every open queue page (``pg_notify``) at commit.
"""

import pgtrigger
from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.db.models import F, Q

from ..core.enums import FINISHED_ITEM, LIVE_ITEM, WorkItemState
from .people import person
from .triggers import notify_per_statement, refuse

#: The NOTIFY channel of work-item changes; one LISTEN per web process
#: (``litejobs.workqueues.live``).
WORKITEM_CHANNEL = "litejobs_workitems"


# Live updates. Statement-level triggers over transition tables: one query sends every
# notification of a statement (a row-level trigger's NOTIFY per row grows quadratically in
# PostgreSQL: a 100,000-row insert took minutes). New items: one notification per queue and
# statement with their count; changes: one per changed row with what a queue page needs to
# redraw it (well below NOTIFY's 8000-byte limit: every text is bounded by its column).
_NOTIFY_INSERTED = f"""
    PERFORM pg_notify('{WORKITEM_CHANNEL}', json_build_object(
        'op', 'insert', 'queue', queue, 'count', count(*)
    )::text)
    FROM inserted GROUP BY queue;
    RETURN NULL;
"""
_NOTIFY_CHANGED = f"""
    PERFORM pg_notify('{WORKITEM_CHANNEL}', json_build_object(
        'op', 'update',
        'id', new_row.id,
        'queue', new_row.queue,
        'state', new_row.state,
        'holder_id', new_row.claimed_by_id,
        'holder', new_row.claimed_by_name,
        'claim_expires_at', new_row.claim_expires_at,
        'resolution', new_row.resolution,
        'resolver', new_row.resolved_by_name
    )::text)
    FROM new_rows AS new_row JOIN old_rows AS old_row ON old_row.id = new_row.id
    WHERE (old_row.state, old_row.claimed_by_id, old_row.claimed_by_name,
           old_row.claim_expires_at)
          IS DISTINCT FROM
          (new_row.state, new_row.claimed_by_id, new_row.claimed_by_name,
           new_row.claim_expires_at)
    ORDER BY new_row.id;
    RETURN NULL;
"""


class WorkItem(models.Model):
    """One row of any model waiting in a human work queue, with its score and its claim.

    ``score_inputs`` are ordered ``[name, value]`` pairs (jsonb would reorder an object's
    keys): what the rule ``score_rule`` answered, shown beside the score. Holder and resolver
    names are copied at the time so a listing and a notification need no join to the users.
    """

    id = models.BigAutoField(primary_key=True)
    queue = models.CharField(max_length=100)
    #: Not a field: set on an item read back from an upsert, whether the statement inserted it.
    created: bool
    content_type = models.ForeignKey(ContentType, on_delete=models.CASCADE, related_name="+")
    object_id = models.CharField(max_length=64, help_text="The target row's primary key.")
    target = GenericForeignKey("content_type", "object_id")
    tenant = models.CharField(max_length=200, blank=True, db_default="")
    score = models.FloatField(db_default=0.0, help_text="Higher lists first; 0 if unscored.")
    score_inputs = models.JSONField(db_default=[], blank=True)
    score_rule = models.CharField(max_length=100, blank=True, db_default="")
    scored_at = models.DateTimeField()
    state = models.CharField(
        max_length=12, choices=WorkItemState.choices, db_default=WorkItemState.OPEN
    )
    claimed_by = person()
    claimed_by_name = models.CharField(max_length=150, blank=True, db_default="")
    claimed_at = models.DateTimeField(null=True, blank=True)
    claim_expires_at = models.DateTimeField(null=True, blank=True)
    resolution = models.CharField(max_length=50, blank=True, db_default="")
    resolution_note = models.TextField(blank=True, db_default="")
    resolved_by = person()
    resolved_by_name = models.CharField(max_length=150, blank=True, db_default="")
    resolved_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        db_table = "litejobs_workitem"
        ordering = ["-id"]
        verbose_name = "work item"
        # The admin's sidebar names the page it opens: the list of queues, "Work queues".
        verbose_name_plural = "work queues"
        indexes = [
            # The listing: score (highest first), then age, among items still to be worked.
            # ``-score`` keeps every key ascending, so a page after (score, created, id) is
            # one row comparison the index answers: page 2,000 costs what page 1 costs.
            models.Index(
                F("queue"),
                -F("score"),
                F("created_at"),
                F("id"),
                name="litejobs_workitem_listing",
                condition=Q(state__in=LIVE_ITEM),
            ),
            # "Mine": the live claims of one person.
            models.Index(
                fields=["claimed_by", "claim_expires_at"],
                name="litejobs_workitem_held",
                condition=Q(state=WorkItemState.CLAIMED),
            ),
            # The history of a queue, newest first; and what purge removes.
            models.Index(
                F("queue"),
                F("resolved_at").desc(),
                F("id").desc(),
                name="litejobs_workitem_finished",
                condition=Q(state__in=FINISHED_ITEM),
            ),
            # Every item of one row (its history across queues).
            models.Index(fields=["content_type", "object_id"], name="litejobs_workitem_target"),
        ]
        constraints = [
            # One live item per row and queue: enqueueing again refreshes it (ON CONFLICT).
            models.UniqueConstraint(
                fields=["queue", "content_type", "object_id"],
                condition=Q(state__in=LIVE_ITEM),
                name="litejobs_workitem_live_target",
                violation_error_message="This row already has a live item in this queue.",
            ),
            models.CheckConstraint(
                condition=Q(state__in=WorkItemState.values), name="litejobs_workitem_state_valid"
            ),
            # A claim has a holder and an expiry; nothing else carries one.
            models.CheckConstraint(
                condition=(
                    Q(state=WorkItemState.CLAIMED, claimed_at__isnull=False)
                    & (Q(claimed_by__isnull=False) | ~Q(claimed_by_name=""))
                    & Q(claim_expires_at__isnull=False)
                )
                | (~Q(state=WorkItemState.CLAIMED) & Q(claim_expires_at__isnull=True)),
                name="litejobs_workitem_claim_complete",
            ),
            models.CheckConstraint(
                condition=~Q(state__in=FINISHED_ITEM) | Q(resolved_at__isnull=False),
                name="litejobs_workitem_finished_has_time",
            ),
        ]
        triggers = [
            # open <-> claimed, and either to done or cancelled; a finished item's state never
            # moves again.
            pgtrigger.FSM(
                name="litejobs_workitem_transitions",
                field="state",
                transitions=[
                    ("open", "claimed"),
                    ("claimed", "open"),
                    ("open", "done"),
                    ("claimed", "done"),
                    ("open", "cancelled"),
                    ("claimed", "cancelled"),
                ],
            ),
            # A finished item's record stays as resolved (deleting a user may still null the
            # user columns: the names stay).
            refuse(
                "litejobs_workitem_finished_frozen",
                pgtrigger.Update,
                "litejobs: work item % is % and no longer changes",
                "OLD.id",
                "OLD.state",
                condition="OLD.state IN ('done', 'cancelled') AND (OLD.queue, OLD.content_type_id, "
                "OLD.object_id, OLD.resolution, OLD.resolution_note, OLD.resolved_by_name, "
                "OLD.resolved_at) IS DISTINCT FROM (NEW.queue, NEW.content_type_id, "
                "NEW.object_id, NEW.resolution, NEW.resolution_note, NEW.resolved_by_name, "
                "NEW.resolved_at)",
            ),
            # Live updates: every new item, claim, renewal, release and resolution, at commit.
            notify_per_statement(
                "litejobs_workitem_notify_inserted",
                pgtrigger.Insert,
                _NOTIFY_INSERTED,
                new="inserted",
            ),
            notify_per_statement(
                "litejobs_workitem_notify_changed",
                pgtrigger.Update,
                _NOTIFY_CHANGED,
                old="old_rows",
                new="new_rows",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.queue} item #{self.id} ({self.state})"
