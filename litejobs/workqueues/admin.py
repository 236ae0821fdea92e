"""Human work queues in the admin: a page per queue, live, with claim / release / resolve
(``pages``), each item's read-only page (visible to whoever may work its queue), and
``WorkItemsShown``, which shows a worked model's claim and resolutions on its own page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.contrib.contenttypes.models import ContentType
from django.db.models import F, Model
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from ..admin.base import field_display
from ..core import clock, times
from ..core.enums import FINISHED_ITEM, LIVE_ITEM, WorkItemState
from ..models import WorkItem
from . import declarations as queues
from .errors import WorkQueueNotFound
from .pages import QueuePages, format_score, local_now, row_url


@admin.register(WorkItem)
class WorkItemAdmin(QueuePages):
    """The queues a user may work, each a live page; items' details are read-only."""

    list_per_page = 50
    fields = (
        "queue",
        "target_link",
        "tenant",
        "state",
        "score_display",
        "score_rule",
        "scored_at_shown",
        "claimed_by_name",
        "claimed_at_shown",
        "claim_expires_at_shown",
        "resolution",
        "resolution_note",
        "resolved_by_name",
        "resolved_at_shown",
        "created_at_shown",
    )
    readonly_fields = fields

    # Its times, written as the queue page writes claim times (one format on both pages).
    scored_at_shown = field_display(WorkItem, "scored_at", local_now)
    claimed_at_shown = field_display(WorkItem, "claimed_at", local_now)
    claim_expires_at_shown = field_display(WorkItem, "claim_expires_at", local_now)
    resolved_at_shown = field_display(WorkItem, "resolved_at", local_now)
    created_at_shown = field_display(WorkItem, "created_at", local_now)

    def has_module_permission(self, request: HttpRequest) -> bool:
        """Shown to users who may work some queue (or view work items in general)."""
        return super().has_module_permission(request) or bool(self._workable(request))

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """An item is visible to whoever may work its queue (or view every work item)."""
        if super().has_view_permission(request, obj):
            return True
        if obj is None:
            return bool(self._workable(request))
        return any(q.name == obj.queue for q in self._workable(request))

    # Item detail -----------------------------------------------------------------------------

    @admin.display(description="item")
    def target_link(self, obj: WorkItem) -> str:
        """The row the item is about, linked to its admin page when it has one."""
        target = obj.target
        if target is None:
            return f"{obj.content_type} {obj.object_id} (deleted)"
        url = row_url(self.admin_site, obj.content_type.model_class(), obj.object_id)
        return format_html('<a href="{}">{}</a>', url, target) if url else str(target)

    @admin.display(description="score")
    def score_display(self, obj: WorkItem) -> str:
        """The score with the inputs that set it, name by name."""
        if not obj.score_rule:
            return "- (unscored queue: oldest first)"
        return format_html(
            "{} <ul>{}</ul>",
            format_score(obj.score),
            format_html_join("", "<li>{}: {}</li>", obj.score_inputs or ()),
        )


if TYPE_CHECKING:
    # Mixed into a ModelAdmin: its ``super()`` is the admin's, and the checker reads it so.
    _ModelAdmin = admin.ModelAdmin
else:
    _ModelAdmin = object


class WorkItemsShown(_ModelAdmin):
    """For the ``ModelAdmin`` of a model worked in a human work queue: the row's own page shows
    its claim (who holds it, since when, until when) and the resolutions made (who, what,
    when, note), in a "Work queue" section below its fields::

        @admin.register(Dispute)
        class DisputeAdmin(WorkItemsShown, admin.ModelAdmin): ...
    """

    work_fields = ("work_claim", "work_resolutions")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        """The claim and the resolutions, shown read-only on a row's page."""
        fields = tuple(super().get_readonly_fields(request, obj))
        return (*fields, *self.work_fields) if obj is not None else fields

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        """The row's own fields, then a "Work queue" section."""
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None:
            return list(fieldsets)
        own = [
            (name, {**opts, "fields": [f for f in opts["fields"] if f not in self.work_fields]})
            for name, opts in fieldsets
        ]
        return [*own, ("Work queue", {"fields": self.work_fields})]

    @admin.display(description="claim")
    def work_claim(self, obj: Model) -> str:
        """Who holds the row's live item, since and until when; or that nobody does."""
        live = [item for item in _items_of(obj) if item.state in LIVE_ITEM]
        if not live:
            return "Not waiting in any work queue."
        return format_html_join(
            "", '<p class="wq-claim-of">{}</p>', ((_claim_text(item),) for item in live)
        )

    @admin.display(description="resolutions")
    def work_resolutions(self, obj: Model) -> str:
        """Every resolution made on the row, newest first: when, who, what, the note."""
        done = [item for item in _items_of(obj) if item.state in FINISHED_ITEM]
        if not done:
            return "None yet."
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    times.when(item.resolved_at),
                    item.resolved_by_name or "-",
                    _resolution_text(item),
                    item.resolution_note or "-",
                    _queue_label(item.queue),
                )
                for item in done
            ),
        )
        return format_html(
            '<table class="wq-resolutions"><thead><tr><th>when</th><th>who</th><th>what</th>'
            "<th>note</th><th>queue</th></tr></thead><tbody>{}</tbody></table>",
            rows,
        )


def _items_of(obj: Model) -> list[WorkItem]:
    """The row's work items in every queue, newest resolution first (live ones first)."""
    kind = ContentType.objects.get_for_model(obj)
    return list(
        WorkItem.objects.filter(content_type=kind, object_id=str(obj.pk)).order_by(
            F("resolved_at").desc(nulls_first=True), "-id"
        )
    )


def _queue_label(name: str) -> str:
    try:
        return queues.get(name).label
    except WorkQueueNotFound:
        return name


def _resolution_text(item: WorkItem) -> str:
    if item.state == WorkItemState.CANCELLED:
        return "cancelled"
    try:
        return queues.get(item.queue).resolution_label(item.resolution)
    except WorkQueueNotFound:
        return item.resolution


def _claim_text(item: WorkItem) -> str:
    """``Held by alice since 12:00:00 UTC, until 13:00:00 UTC, in Dispute review.``"""
    queue = _queue_label(item.queue)
    now = clock.now()
    expires = item.claim_expires_at
    if item.state == WorkItemState.CLAIMED and expires is not None and expires > now:
        return (
            f"Held by {item.claimed_by_name or 'a deleted user'} since "
            f"{times.when(item.claimed_at, now)}, until {times.when(expires, now)}, in {queue}."
        )
    if item.state == WorkItemState.CLAIMED:
        return (
            f"Unclaimed in {queue}: {item.claimed_by_name or 'a deleted user'}'s claim expired "
            f"at {times.when(expires, now)}."
        )
    return f"Unclaimed in {queue}: open to anyone who may work it."
