"""The outbox in the admin (its ``Feature.admin``).

Outbox messages are read-only (staged by code, published by the relay), filtered by topic and
state, each showing the jobs and deliveries it produced; the listing's header shows the backlog
and the relay leader.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from ..admin.base import ReadOnlyAdmin
from ..admin.jobs import CappedCountPaginator
from ..conf import settings
from ..core import clock
from ..core.durations import format_age
from ..jobs.keys import subscriber_key
from ..models import (
    Job,
    LeaderLease,
    LeaderRole,
    OutboxMessage,
    WebhookDelivery,
)
from . import operations as outbox_operations
from .declarations import shown_payload
from .topics import declared_topics


def _pre(value: Any) -> str:
    text = json.dumps(value, indent=2, sort_keys=True)
    return format_html('<pre style="white-space: pre-wrap; margin: 0">{}</pre>', text)


class TopicFilter(admin.SimpleListFilter):
    """Filter by topic; the choices are the declared topics (no DISTINCT over the table)."""

    title = "topic"
    parameter_name = "topic"

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]
    ) -> list[tuple[str, str]]:
        """Declared topics (plus the one selected, e.g. a topic no longer declared)."""
        names = {t.name for t in declared_topics()}
        selected = self.value()
        if selected:
            names.add(selected)
        return [(name, name) for name in sorted(names)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        """Messages or deliveries of the selected topic."""
        return queryset.filter(topic=self.value()) if self.value() else queryset


class PublishedFilter(admin.SimpleListFilter):
    """Pending (waiting for the relay) or published."""

    title = "state"
    parameter_name = "state"

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]
    ) -> list[tuple[str, str]]:
        """The two states of a message."""
        return [("pending", "pending"), ("published", "published")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        """Messages in the selected state."""
        if self.value() == "pending":
            return queryset.filter(published_at__isnull=True)
        if self.value() == "published":
            return queryset.filter(published_at__isnull=False)
        return queryset


@admin.register(OutboxMessage)
class OutboxMessageAdmin(ReadOnlyAdmin):
    """Staged messages: pending until the relay publishes them, then kept for the retention."""

    list_display = ("id", "topic", "key", "tenant", "state", "created_at", "published_at")
    list_filter = (PublishedFilter, TopicFilter)
    search_fields = ("=key",)
    search_help_text = "An exact ordering key, or a message id."
    paginator = CappedCountPaginator
    show_full_result_count = False
    list_per_page = 50
    actions = None
    change_list_template = "admin/litejobs/outboxmessage/change_list.html"
    fields = (
        "id",
        "topic",
        "key",
        "tenant",
        "state",
        "created_at",
        "published_at",
        "relay_fence",
        "payload_shown",
        "subscriber_jobs",
        "deliveries",
    )
    readonly_fields = fields

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        """A number finds that message id; anything else an exact key."""
        term = search_term.strip()
        if term.isdigit():
            return queryset.filter(pk=int(term)), False
        return super().get_search_results(request, queryset, term)

    @admin.display(description="state")
    def state(self, obj: OutboxMessage) -> str:
        """pending or published."""
        return obj.state

    @admin.display(description="payload")
    def payload_shown(self, obj: OutboxMessage) -> str:
        """The staged JSON, its topic's sensitive fields redacted."""
        return _pre(shown_payload(obj.topic, obj.payload))

    @admin.display(description="subscriber jobs")
    def subscriber_jobs(self, obj: OutboxMessage) -> str:
        """The jobs the relay created for it (one per subscriber), linked."""
        jobs = Job.objects.filter(key=subscriber_key(obj.pk)).order_by("id")
        if not jobs:
            return "-" if obj.published_at else "- (not published yet)"
        return format_html_join(
            mark_safe("<br>"),
            '<a href="{}">{} #{}</a> ({})',
            (
                (reverse("admin:litejobs_job_change", args=[j.pk]), j.name, j.pk, j.state)
                for j in jobs
            ),
        )

    @admin.display(description="webhook deliveries")
    def deliveries(self, obj: OutboxMessage) -> str:
        """Its deliveries (one per interested endpoint), linked."""
        rows = WebhookDelivery.objects.filter(message_id=obj.pk).order_by("id")
        if not rows:
            return "-"
        return format_html_join(
            mark_safe("<br>"),
            '<a href="{}">delivery {}</a> to endpoint {}: {}',
            (
                (
                    reverse("admin:litejobs_webhookdelivery_change", args=[d.pk]),
                    d.pk,
                    d.endpoint_id,
                    d.state,
                )
                for d in rows
            ),
        )

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """The listing, headed by the backlog and the relay leader."""
        now = clock.now()
        waiting = outbox_operations.backlog(now=now)
        lease = LeaderLease.of(LeaderRole.RELAY, settings.DATABASE)
        context = {
            "backlog": waiting,
            "backlog_age": format_age(waiting.oldest_age) if waiting.oldest_age is not None else "",
            "lease": lease,
            "lease_live": lease is not None
            and lease.expires_at >= clock.database_now(settings.DATABASE),
            **(extra_context or {}),
        }
        return super().changelist_view(request, extra_context=context)
