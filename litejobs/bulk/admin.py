"""Bulk money actions in the admin: the preview, the TOTP confirmation, and the audit records.

A queue page offers each bulk money action declared on its queue as a button beside its bulk
actions (``offer``); pressing it posts the ticked items to the action's **preview**,
which lists every item with its amount, the count and the totals per currency, and asks for the
code of the user's phone. The **confirmation** verifies the code and redirects to the new
``BulkAction`` (a refused code redirects back to the preview: post/redirect/get), whose page
shows each item's outcome as the jobs run (it refreshes itself while any is pending) with a
*retry* button beside a failed item. Every view calls ``litejobs.bulk``
— the API user code calls — and answers 403 to a user who may not run the action.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin, messages
from django.contrib.admin import AdminSite
from django.core.exceptions import PermissionDenied
from django.db.models import Model, Q, QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.urls import NoReverseMatch, URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.translation import ngettext
from django.views.decorators.debug import sensitive_post_parameters

from .. import bulk
from ..admin.base import ReadOnlyAdmin, admin_page, once_per, refused_error
from ..exceptions import InvalidInput, LitejobsError
from ..models import BulkAction, BulkActionItem, BulkConfirmationAttempt, BulkItemState
from ..workqueues import admin as workqueue_admin
from ..workqueues import declarations as queues
from ..workqueues.errors import WorkQueueForbidden
from .devices import wait_seconds, wait_text
from .errors import BulkActionNotFound, BulkRefused, BulkSetChanged

PREVIEW_TEMPLATE = "admin/litejobs/bulk/preview.html"
DETAIL_TEMPLATE = "admin/litejobs/bulk/detail.html"
#: Seconds between reloads of a bulk action's page while items are still executing.
REFRESH_SECONDS = 2
#: Refusals that mean "not yours to do" (403) rather than "try again" (a redirect to the preview):
#: the user lacks a permission or a device, or the action binds nothing and nobody may run it.
FORBIDDEN_CODES = (
    "bulk-forbidden",
    "work-queue-forbidden",
    "bulk-device-missing",
    "bulk-binding-missing",
)
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
#: Where a refused confirmation leaves its message for the preview page it redirects to.
REFUSAL_KEY = "litejobs_bulk_refusal"


def offer(queue: queues.WorkQueue, request: HttpRequest) -> list[dict[str, Any]]:
    """The bulk money actions a queue page offers the user: each with its preview URL, or, when
    they have no confirmed TOTP device, why it is unavailable and how to add one. Actions whose
    permission the user lacks are not offered at all."""
    found = []
    for action in bulk.actions_for(queue.name):
        if not action.allows(request.user):
            continue
        found.append(
            {
                "action": action,
                "url": reverse("admin:litejobs_bulkaction_preview", kwargs={"action": action.name}),
                "unavailable": bulk.unavailable_reason(action, request.user),
            }
        )
    return found


workqueue_admin.money_actions.register("bulk", offer)


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
class BulkActionAdmin(_ByActionAdmin):
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
        return _totals(obj)

    @admin.display(description="outcome")
    def outcome(self, obj: BulkAction) -> str:
        """``240 succeeded`` / ``2 failed, 238 succeeded`` / ``executing: 12 of 240 left``."""
        return _outcome(bulk.summary(obj), obj.item_count)

    # Pages -----------------------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        """The preview, confirmation and retry views, beside the record pages."""
        view = self.admin_site.admin_view
        return [
            path(
                "preview/<str:action>/", view(self.preview_view), name="litejobs_bulkaction_preview"
            ),
            path(
                "confirm/<str:action>/",
                # The code typed never reaches an error report (Django masks it there).
                view(sensitive_post_parameters("code")(self.confirm_view)),
                name="litejobs_bulkaction_confirm",
            ),
            path(
                "<int:pk>/retry/<int:entry>/",
                view(self.retry_view),
                name="litejobs_bulkaction_retry",
            ),
            *super().get_urls(),
        ]

    def _action_for(self, name: str) -> bulk.BulkMoneyAction:
        try:
            return bulk.get_action(name)
        except BulkActionNotFound as error:
            raise Http404(str(error)) from error

    def _queue_url(self, action: bulk.BulkMoneyAction) -> str:
        return reverse("admin:litejobs_workitem_queue", kwargs={"queue": action.queue_name})

    def preview_view(self, request: HttpRequest, action: str) -> HttpResponse:
        """POST from a queue page (the ticked ``item`` ids): the preview, with the code form.
        GET with ``?token=``: that preview read again, where a refused confirmation lands
        (post/redirect/get: reloading it shows the preview, and types no code twice)."""
        declared = self._action_for(action)
        if request.method == "GET" and "token" in request.GET:
            return self._preview_again(request, declared, request.GET["token"])
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        try:
            made = bulk.preview(declared, request.POST.getlist("item"), request.user)
        except (WorkQueueForbidden, BulkRefused) as error:
            if error.code in FORBIDDEN_CODES:
                return self._page(request, declared, None, error=error, status=403)
            raise
        except InvalidInput as error:
            refused_error(request, error)
            return HttpResponseRedirect(self._queue_url(declared))
        return self._page(request, declared, made)

    def _preview_again(
        self, request: HttpRequest, declared: bulk.BulkMoneyAction, token: str
    ) -> HttpResponse:
        """The preview ``token`` names, read from the database now, with the refusal that sent
        the user here (once: a reload shows the preview without it)."""
        made = bulk.reread(token, request.user)
        if made is None:
            messages.error(
                request,
                "This preview is no longer current (too old, or not yours): nothing moved. "
                "Tick the items again and preview them.",
                extra_tags="bulk-preview-invalid",
            )
            return HttpResponseRedirect(self._queue_url(declared))
        refusal = request.session.get(REFUSAL_KEY) or {}
        if refusal.get("token") == token:
            del request.session[REFUSAL_KEY]
            return self._page(request, declared, made, told=(refusal["message"], refusal["code"]))
        return self._page(request, declared, made)

    def _after_refusal(
        self, request: HttpRequest, declared: bulk.BulkMoneyAction, token: str, error: Exception
    ) -> HttpResponse:
        """A refused confirmation answers a redirect to its preview (a GET), which tells why:
        reloading that page re-posts no code, so it neither counts another wrong code nor
        lengthens the throttling wait."""
        code = getattr(error, "code", "bulk-refused")
        request.session[REFUSAL_KEY] = {"token": token, "message": error.args[0], "code": code}
        url = reverse("admin:litejobs_bulkaction_preview", kwargs={"action": declared.name})
        return HttpResponseRedirect(f"{url}?{urlencode({'token': token})}", status=303)

    def confirm_view(self, request: HttpRequest, action: str) -> HttpResponse:
        """POST of the preview's form: the code typed, and the signed preview it confirms.
        Answers a redirect either way: to the record when confirmed, else to the preview."""
        declared = self._action_for(action)
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        token = request.POST.get("token", "")
        try:
            done = bulk.confirm(
                token,
                request.POST.get("code", ""),
                request.user,
                device=request.POST.get("device") or None,
                remote_addr=request.META.get("REMOTE_ADDR"),
            )
        except BulkSetChanged as changed:
            return self._after_refusal(request, declared, changed.preview.token, changed)
        except LitejobsError as error:
            if error.code in FORBIDDEN_CODES:
                return self._page(request, declared, None, error=error, status=403)
            if error.code in (
                "bulk-preview-invalid",
                "bulk-preview-expired",
                "selection-empty",
                "bulk-amount-invalid",
                "bulk-action-unknown",
            ):
                refused_error(request, error)
                return HttpResponseRedirect(self._queue_url(declared))
            return self._after_refusal(request, declared, token, error)
        record = done.bulk_action
        if done.created:
            messages.success(
                request,
                f"Confirmed: bulk action #{record.pk} releases {record.item_count} "
                f"{ngettext('item', 'items', record.item_count)} "
                f"({_totals(record)}), each by its own job. Outcomes appear below as they run.",
            )
        else:
            messages.info(
                request,
                f"This preview was already confirmed as bulk action #{record.pk}; nothing was "
                "started twice.",
            )
        return HttpResponseRedirect(reverse("admin:litejobs_bulkaction_change", args=[record.pk]))

    def retry_view(self, request: HttpRequest, pk: int, entry: int) -> HttpResponse:
        """POST: run one failed item again."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        item = BulkActionItem.objects.filter(pk=entry, bulk_action_id=pk).first()
        if item is None:
            raise Http404(f"Bulk action #{pk} has no item #{entry}.")
        try:
            bulk.retry_item(item, request.user)
        except (WorkQueueForbidden, BulkRefused) as error:
            if error.code in ("bulk-forbidden", "work-queue-forbidden"):
                raise PermissionDenied(str(error)) from error
            refused_error(request, error)
        except LitejobsError as error:
            refused_error(request, error)
        else:
            messages.success(
                request, f"Item #{item.work_item_id} runs again (same confirmation, same key)."
            )
        return HttpResponseRedirect(reverse("admin:litejobs_bulkaction_change", args=[pk]))

    def _page(
        self,
        request: HttpRequest,
        action: bulk.BulkMoneyAction,
        made: bulk.Preview | None,
        *,
        error: LitejobsError | None = None,
        told: tuple[str, str] | None = None,
        status: int = 200,
    ) -> HttpResponse:
        """The preview page; ``error`` (refused now) or ``told`` (message and code of the
        refusal that redirected here) shown above it."""
        devices = bulk.devices_for(request.user) if made is not None else []
        message, code = told or ((error.args[0], error.code) if error else ("", ""))
        context = {
            "action": action,
            "queue": action.queue(),
            "model_label": action.queue().model._meta.verbose_name,
            "queue_url": self._queue_url(action),
            "preview": made,
            **(self._preview_context(action, made) if made else {}),
            "devices": devices,
            "digits": devices[0].digits if devices else 6,
            "wait": _wait(devices),
            "error": message,
            "error_code": code,
            "refused": error is not None and made is None,
        }
        title = f"Preview: {action.label}"
        return admin_page(self, request, PREVIEW_TEMPLATE, title, context, status=status)

    def _preview_context(self, action: bulk.BulkMoneyAction, made: bulk.Preview) -> dict[str, Any]:
        """The lines, the totals row per currency (count and sum), and the button's words,
        which name the money it moves."""
        counts: dict[str, int] = {}
        for line in made.lines:
            counts[line.currency] = counts.get(line.currency, 0) + 1
        totals = [
            {"currency": currency, "count": counts.get(currency, 0), "amount": money}
            for currency, money in ((c, bulk.money(t, c)) for c, t in made.totals)
        ]
        items = ngettext("%(n)d item", "%(n)d items", made.count) % {"n": made.count}
        money = " and ".join(bulk.money(total, currency) for currency, total in made.totals)
        return {
            "lines": [self._line(action, line) for line in made.lines],
            "binds": any(line.bound for line in made.lines),
            "totals": totals,
            "button": f"Confirm {action.label[:1].lower()}{action.label[1:]}: {items}, {money}",
        }

    def _line(self, action: bulk.BulkMoneyAction, line: bulk.PreviewLine) -> dict[str, Any]:
        return {
            "line": line,
            "amount": bulk.money(line.amount, line.currency),
            "bound": bulk.bound_text(line.bound),
            "url": _row_url(self.admin_site, action.queue().model, line.object_id),
        }

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
            "totals": _totals(record),
            "items": [
                {
                    "item": item,
                    "amount": bulk.money(item.amount, item.currency),
                    "bound": bulk.bound_text(item.bound or {}),
                    "url": _row_url(self.admin_site, model, item.object_id) if model else "",
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


def _wait(devices: list[Any]) -> str:
    """How long django-otp's throttling still makes the user's first device wait, in words
    (empty when a code may be typed now): read from the device's row, so a reload tells the
    time left, not the time when the code was refused."""
    if not devices:
        return ""
    seconds = wait_seconds(devices[0])
    return wait_text(seconds) if seconds else ""


def _totals(record: BulkAction) -> str:
    return " · ".join(
        bulk.money(Decimal(total), currency)
        for currency, total in sorted((record.totals or {}).items())
    )


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


def _row_url(admin_site: AdminSite, model: type[Model] | None, object_id: str) -> str:
    if model is None or not admin_site.is_registered(model):
        return ""
    try:
        return reverse(
            f"{admin_site.name}:{model._meta.app_label}_{model._meta.model_name}_change",
            args=[object_id],
        )
    except NoReverseMatch:
        return ""


def _job_url(job_id: int | None) -> str:
    if job_id is None:
        return ""
    try:
        return reverse("admin:litejobs_job_change", args=[job_id])
    except NoReverseMatch:
        return ""
