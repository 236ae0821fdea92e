"""The pages that create a bulk money action: the **preview** a queue page's button posts the
ticked items to (every item with its amount, the count and the totals per currency, and the
code form), the TOTP **confirmation**, and the *retry* of a failed item; as a mixin of the
bulk actions' admin. A queue page offers each action declared on its queue (``offer``).

A refused confirmation redirects back to its preview (post/redirect/get), which tells why.
Every view calls ``litejobs.bulk`` — the API user code calls — and answers 403 to a user who
may not run the action.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.urls import URLPattern, reverse
from django.utils.translation import ngettext
from django.views.decorators.debug import sensitive_post_parameters

from .. import bulk
from ..admin.base import ReadOnlyAdmin, admin_page, refused_error
from ..exceptions import InvalidInput, LitejobsError
from ..models import BulkAction, BulkActionItem
from ..workqueues import declarations as queues
from ..workqueues import pages as workqueue_pages
from ..workqueues.errors import WorkQueueForbidden
from ..workqueues.pages import row_url
from .devices import wait_seconds, wait_text
from .errors import BulkActionNotFound, BulkRefused, BulkSetChanged

PREVIEW_TEMPLATE = "admin/litejobs/bulk/preview.html"
#: Refusals that mean "not yours to do" (403) rather than "try again" (a redirect to the preview):
#: the user lacks a permission or a device, or the action binds nothing and nobody may run it.
FORBIDDEN_CODES = (
    "bulk-forbidden",
    "work-queue-forbidden",
    "bulk-device-missing",
    "bulk-binding-missing",
)
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


workqueue_pages.money_actions.register("bulk", offer)


def totals_text(record: BulkAction) -> str:
    return " · ".join(
        bulk.money(Decimal(total), currency)
        for currency, total in sorted((record.totals or {}).items())
    )


class PreviewPages(ReadOnlyAdmin):
    """The preview, confirmation and retry views of the bulk actions' admin."""

    def get_urls(self) -> list[URLPattern]:
        """The preview, confirmation and retry views, beside the record pages."""
        # The code typed never reaches an error report (Django masks it there).
        confirm = sensitive_post_parameters("code")(self.confirm_view)
        return [
            self.page_url("preview/<str:action>/", self.preview_view, "preview"),
            self.page_url("confirm/<str:action>/", confirm, "confirm"),
            self.page_url("<int:pk>/retry/<int:entry>/", self.retry_view, "retry"),
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
                f"({totals_text(record)}), each by its own job. Outcomes appear below as they run.",
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
            "url": row_url(self.admin_site, action.queue().model, line.object_id),
        }


def _wait(devices: list[Any]) -> str:
    """How long django-otp's throttling still makes the user's first device wait, in words
    (empty when a code may be typed now): read from the device's row, so a reload tells the
    time left, not the time when the code was refused."""
    if not devices:
        return ""
    seconds = wait_seconds(devices[0])
    return wait_text(seconds) if seconds else ""
