"""Bulk money actions in the admin: the records and the audit of the codes typed.

A queue page offers each bulk money action declared on its queue; its preview and TOTP
confirmation (``pages``) create a ``BulkAction``, whose page shows each item's outcome as the
jobs run (it refreshes itself while any is pending) with a *retry* button beside a failed
item. Who runs an action sees its history; the view permission shows every action's.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html

from .. import bulk
from ..admin.base import ReadOnlyAdmin, admin_page, once_per
from ..models import BulkAction, BulkConfirmationAttempt, BulkItemState
from ..workqueues.pages import row_url
from .errors import BulkActionNotFound
from .pages import PreviewPages, totals_text

DETAIL_TEMPLATE = "admin/litejobs/bulk/detail.html"
#: Seconds between reloads of a bulk action's page while items are still executing.
REFRESH_SECONDS = 2
#: A confirmation attempt's result in words, for the people who read the audit (its code stays
#: beside it, as the cell's title and data attribute, for operators).
RESULT_WORDS = {
    "confirmed": "confirmed",
    "already-confirmed": "already confirmed (a second submit: nothing started twice)",
    "bulk-code-missing": "refused: no code typed",
    "bulk-code-invalid": "refused: wrong code",
    "bulk-code-expired": "refused: expired code",
    "bulk-code-reused": "refused: code already used",
    "bulk-code-throttled": "refused: typed during the wait after a wrong code",
    "bulk-set-changed": "refused: the items changed since the preview",
    "bulk-preview-invalid": "refused: not a preview of this user's",
    "bulk-preview-expired": "refused: the preview was too old",
    "bulk-forbidden": "refused: may not run this action",
    "work-queue-forbidden": "refused: may not work this queue",
    "bulk-device-missing": "refused: no confirmed device",
    "bulk-binding-missing": "refused: the action binds nothing (litejobs.E013)",
    "selection-empty": "refused: no item could be acted on",
}


def _runnable(request: HttpRequest) -> list[str]:
    """The names of the actions this user may run (cached on the request)."""
    return once_per(
        request,
        "_litejobs_bulk_runnable",
        lambda: [a.name for a in bulk.all_actions() if a.allows(request.user)],
    )


class _ByActionAdmin(ReadOnlyAdmin):
    """Visible to holders of the model's view permission (operators, auditors) and, for the
    actions they may run, to the people who run them (finance sees its own history)."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return super().has_module_permission(request) or bool(_runnable(request))

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if super().has_view_permission(request, obj):
            return True
        if obj is None:
            return bool(_runnable(request))
        return obj.action in _runnable(request)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        if super().has_view_permission(request):
            return queryset
        return queryset.filter(action__in=_runnable(request))


@admin.register(BulkAction)
class BulkActionAdmin(PreviewPages, _ByActionAdmin):
    """Confirmed bulk money actions (read-only), their items' outcomes, and the preview and
    confirmation pages that create them."""

    list_display = (
        "id",
        "action",
        "username",
        "confirmed_at",
        "item_count",
        "totals_text",
        "outcome",
    )
    list_filter = ("action",)
    search_fields = ("username", "digest")
    list_per_page = 50

    @admin.display(description="totals")
    def totals_text(self, obj: BulkAction) -> str:
        """``EUR 18,400.00 · USD 1,250.00``."""
        return totals_text(obj)

    @admin.display(description="outcome")
    def outcome(self, obj: BulkAction) -> str:
        """``240 succeeded`` / ``2 failed, 238 succeeded`` / ``executing: 12 of 240 left``."""
        return _outcome(bulk.summary(obj), obj.item_count)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The record: who, when, the device, digest and totals, then every item's outcome."""
        record = self.get_object(request, object_id)
        if record is None:
            raise Http404(f"No bulk action #{object_id}.")
        if not self.has_view_permission(request, record):
            raise PermissionDenied
        try:
            declared = bulk.get_action(record.action)
        except BulkActionNotFound:
            declared = None
        can_retry = bool(declared and declared.allows(request.user))
        model = declared.queue().model if declared else None
        summary = bulk.summary(record)
        items = list(record.items.order_by("id"))
        attempts = BulkConfirmationAttempt.objects.filter(
            Q(bulk_action=record) | Q(confirmation=record.confirmation)
        ).order_by("at", "id")
        context = {
            "original": record,
            "record": record,
            "declared": declared,
            "summary": summary,
            "outcome": _outcome(summary, record.item_count),
            "totals": totals_text(record),
            "items": [
                {
                    "item": item,
                    "amount": bulk.money(item.amount, item.currency),
                    "bound": bulk.bound_text(item.bound or {}),
                    "url": row_url(self.admin_site, model, item.object_id) if model else "",
                    "job_url": _job_url(item.job_id),
                    "can_retry": can_retry and item.state == BulkItemState.FAILED,
                }
                for item in items
            ],
            "binds": any(item.bound for item in items),
            "attempts": [(attempt, result_words(attempt.result)) for attempt in attempts],
            "refresh": REFRESH_SECONDS if summary.status == "executing" else 0,
            "has_view_permission": True,
            **(extra_context or {}),
        }
        title = f"Bulk action #{record.pk}: {declared.label if declared else record.action}"
        return admin_page(self, request, DETAIL_TEMPLATE, title, context)


@admin.register(BulkConfirmationAttempt)
class BulkConfirmationAttemptAdmin(_ByActionAdmin):
    """Every confirmation attempt, right or wrong (the audit of the codes typed; never the
    codes themselves)."""

    list_display = (
        "at",
        "username",
        "action",
        "result_text",
        "device_name",
        "item_count",
        "short_digest",
        "record_link",
        "remote_addr",
    )
    list_filter = ("result", "action")
    search_fields = ("username", "digest")
    list_per_page = 100
    fields = (
        "at",
        "username",
        "action",
        "result_text",
        "device_name",
        "confirmation",
        "fingerprint",
        "item_count",
        "remote_addr",
        "record_link",
    )
    readonly_fields = fields

    @admin.display(description="fingerprint")
    def short_digest(self, obj: BulkConfirmationAttempt) -> str:
        """The first 12 characters of the previewed set's digest (its fingerprint)."""
        return obj.digest[:12]

    @admin.display(description="result", ordering="result")
    def result_text(self, obj: BulkConfirmationAttempt) -> str:
        """The result in words, its code kept as the title."""
        return format_html('<span title="{}">{}</span>', obj.result, result_words(obj.result))

    @admin.display(description="fingerprint of the previewed set")
    def fingerprint(self, obj: BulkConfirmationAttempt) -> str:
        """The whole digest the code was typed for (it names no device and no code)."""
        return obj.digest or "-"

    @admin.display(description="bulk action")
    def record_link(self, obj: BulkConfirmationAttempt) -> str:
        """The bulk action a confirmed attempt wrote (or found, for a double submit)."""
        if obj.bulk_action_id is None:
            return "-"
        url = reverse("admin:litejobs_bulkaction_change", args=[obj.bulk_action_id])
        return format_html('<a href="{}">#{}</a>', url, obj.bulk_action_id)


def result_words(result: str) -> str:
    """A confirmation attempt's result as people read it (the code itself when unknown)."""
    return RESULT_WORDS.get(result, result)


def _outcome(summary: bulk.Summary, count: int) -> str:
    parts = []
    if summary.failed:
        parts.append(f"{summary.failed} failed")
    if summary.succeeded:
        parts.append(f"{summary.succeeded} succeeded")
    if summary.status == "executing":
        left = summary.pending + summary.retrying
        retrying = f", {summary.retrying} retrying" if summary.retrying else ""
        return f"executing: {left} of {count} left{retrying}" + (
            f" ({', '.join(parts)})" if parts else ""
        )
    return ", ".join(parts) or "-"


def _job_url(job_id: int | None) -> str:
    if job_id is None:
        return ""
    try:
        return reverse("admin:litejobs_job_change", args=[job_id])
    except NoReverseMatch:
        return ""
