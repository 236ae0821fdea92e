"""The work-queue pages in the admin: the queues a user may work, with their live counts, and
each queue's page, live, with claim / release / resolve.

Each queue's page lists its items by score then age with the score's inputs beside each, who
holds a claim and until when, the buttons the claim mode allows, bulk actions, filters and
keyset pagination. Every button calls ``litejobs.workqueues`` — the API user code calls — so
the admin cannot act in a way the API would refuse. The page follows other people's claims
and resolutions live over a websocket (``litejobs.workqueues.sockets``) when channels is
installed (``litejobs[live]``); without it the page says it has no live updates. A mixin of
the work items' admin.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.admin import AdminSite
from django.core.exceptions import PermissionDenied
from django.db.models import Model
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.urls import NoReverseMatch, URLPattern, reverse
from django.utils import timezone

from ..admin.base import ReadOnlyAdmin, admin_page, once_per, refused, refused_error
from ..core import clock, times
from ..core.registry import Registry
from ..exceptions import InvalidInput, LitejobsError
from ..models import WorkItem
from . import acting, commands, listing
from . import declarations as queues
from .errors import WorkQueueNotFound
from .live import websocket_path

#: Name -> ``offer(queue, request)``: the money actions a queue page offers the user, each a
#: dict the template shows (``action``, ``url``, ``unavailable``); bulk money actions register.
money_actions: Registry[Callable[[queues.WorkQueue, Any], list[dict[str, Any]]]] = Registry(
    "queue page money action", origin=None
)

INDEX_TEMPLATE = "admin/litejobs/workqueue/index.html"
QUEUE_TEMPLATE = "admin/litejobs/workqueue/queue.html"
#: Page sizes the queue page offers; the first is the default.
PAGE_SIZES = (50, 25, 100, 200)
#: The listing views and their tab labels (the claim views only where claims exist).
VIEW_LABELS = {
    "todo": "To do",
    "unclaimed": "Unclaimed",
    "mine": "Held by me",
    "others": "Held by others",
    "closed": "Closed",
}


def format_score(score: float) -> str:
    """``82`` for whole scores, else up to two decimals (``82.5``)."""
    if float(score).is_integer():
        return str(int(score))
    return f"{score:.2f}".rstrip("0").rstrip(".")


def score_label(item: WorkItem) -> str:
    """The rule's label (``urgency``), or its id's last segment once it is gone."""
    rule = queues.get_rule(item.score_rule)
    return rule.label if rule else item.score_rule.rsplit(".", 1)[-1]


def score_text(item: WorkItem) -> str:
    """``urgency 82: EUR 1,900 · 6 days · evidence missing`` (empty for unscored queues)."""
    if not item.score_rule:
        return ""
    values = " · ".join(value for _, value in item.score_inputs or ())
    return f"{score_label(item)} {format_score(item.score)}" + (f": {values}" if values else "")


def age_text(delta: timedelta) -> str:
    """How long an item has waited, in the largest sensible unit."""
    seconds = max(int(delta.total_seconds()), 0)
    if seconds < 3600:
        return f"{seconds // 60} min"
    if seconds < 2 * 86400:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} days"


def lease_text(lease: timedelta) -> str:
    """A claim lease in the unit it was declared in (``1 h``, ``90 min``, ``45 s``)."""
    seconds = int(lease.total_seconds())
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    if seconds % 60 == 0:
        return f"{seconds // 60} min"
    return f"{seconds} s"


def local_now(instant: datetime) -> str:
    """An instant as the queue page writes claim times, seen from now."""
    return times.when(instant)


def _local(instant: datetime | None, now: datetime | None = None) -> str:
    """A claim time as every work-queue page writes it (``13:00:05 UTC``; with the day when
    not within hours of ``now``); empty for none."""
    return times.when(instant, now) if instant else ""


def row_url(admin_site: AdminSite, model: type[Model] | None, object_id: str) -> str:
    """The admin page of a worked row in ``admin_site``; empty when it has none there."""
    if model is None or not admin_site.is_registered(model):
        return ""
    try:
        return reverse(
            f"{admin_site.name}:{model._meta.app_label}_{model._meta.model_name}_change",
            args=[object_id],
        )
    except NoReverseMatch:
        return ""


class QueuePages(ReadOnlyAdmin):
    """The queues' index and each queue's page, beside the work items' own pages."""

    def _workable(self, request: HttpRequest) -> list[queues.WorkQueue]:
        return once_per(
            request,
            "_litejobs_workable",
            lambda: [q for q in queues.all_queues() if q.allows(request.user)],
        )

    def get_urls(self) -> list[URLPattern]:
        """The queue pages, beside the item detail pages."""
        return [self.page_url("queue/<str:queue>/", self.queue_view, "queue"), *super().get_urls()]

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """The queues this user may work, with their live counts."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        now = clock.now()
        rows = []
        for queue in self._workable(request):
            live, capped = listing.count(queue.name, now=now)
            mine, _ = listing.count(queue.name, user=request.user, view="mine", now=now)
            rows.append(
                {
                    "queue": queue,
                    "url": self._queue_url(queue.name),
                    "live": live,
                    "capped": capped,
                    "mine": mine,
                    "lease": lease_text(queue.claim_lease),
                }
            )
        context = {"rows": rows, **(extra_context or {})}
        return admin_page(self, request, INDEX_TEMPLATE, "Work queues", context)

    def _queue_url(self, name: str, **params: Any) -> str:
        url = reverse(
            f"{self.admin_site.name}:{self.opts.app_label}_{self.opts.model_name}_queue",
            kwargs={"queue": name},
        )
        params = {k: v for k, v in params.items() if v not in (None, "")}
        return f"{url}?{urlencode(params)}" if params else url

    def _queue_for(self, request: HttpRequest, name: str) -> queues.WorkQueue:
        try:
            queue = queues.get(name)
        except WorkQueueNotFound as error:
            raise Http404(str(error)) from error
        if not queue.allows(request.user):
            raise PermissionDenied(f"This page needs the permission {queue.permission!r}.")
        return queue

    def queue_view(self, request: HttpRequest, queue: str) -> HttpResponse:
        """The queue's page (GET) and its actions (POST)."""
        work_queue = self._queue_for(request, queue)
        if request.method == "POST":
            return self._act(request, work_queue)
        return self._listing(request, work_queue)

    def _listing(self, request: HttpRequest, queue: queues.WorkQueue) -> HttpResponse:
        now = clock.now()
        views = [v for v in listing.VIEWS if queue.claims_enabled or v in ("todo", "closed")]
        view = request.GET.get("view") or "todo"
        if view not in views:
            view = "todo"
        per_page = _int(request.GET.get("per_page"), PAGE_SIZES)
        tenant = request.GET.get("tenant", "").strip()[:200] or None
        after = request.GET.get("after") or None
        filters: dict[str, Any] = {"user": request.user, "view": view, "tenant": tenant, "now": now}
        try:
            page = listing.page(queue.name, after=after, limit=per_page, **filters)
        except InvalidInput as error:
            refused_error(request, error)
            after = None
            page = listing.page(queue.name, limit=per_page, **filters)
        total, capped = listing.count(queue.name, **filters)
        mine = (
            listing.count(queue.name, user=request.user, view="mine", now=now)[0]
            if queue.claims_enabled
            else 0
        )
        found = listing.targets(queue, page.items)
        model = queue.model
        can_open = self.admin_site.is_registered(model) and request.user.has_perm(
            f"{model._meta.app_label}.view_{model._meta.model_name}"
        )
        rows = []
        for item in page.items:
            target = found.get(item.object_id)
            rows.append(
                {
                    "item": item,
                    "status": listing.status(item, request.user, now),
                    "target": target,
                    "target_url": row_url(self.admin_site, model, item.object_id)
                    if can_open
                    else "",
                    "score": score_text(item),
                    "score_label": score_label(item),
                    "score_value": format_score(item.score),
                    "inputs": item.score_inputs or [],
                    "age": age_text(now - item.created_at),
                    "until": _local(item.claim_expires_at, now),
                    "resolution": queue.resolution_label(item.resolution),
                }
            )
        base = {"view": view, "tenant": tenant, "per_page": per_page}
        context = {
            "queue": queue,
            "model_label": model._meta.verbose_name,
            "resolution_labels": dict(queue.resolutions),
            "rows": rows,
            "view": view,
            "views": [
                (v, VIEW_LABELS[v], self._queue_url(queue.name, view=v, tenant=tenant))
                for v in views
            ],
            "tenant": tenant or "",
            "per_page": per_page,
            "page_sizes": sorted(PAGE_SIZES),
            "total": total,
            "capped": capped,
            "count_cap": listing.COUNT_CAP,
            "mine": mine,
            "first_url": self._queue_url(queue.name, **base) if after else "",
            "next_url": (
                self._queue_url(queue.name, after=page.next_cursor, **base)
                if page.next_cursor
                else ""
            ),
            "ws_path": websocket_path(queue.name),
            "now": now,
            "lease_text": lease_text(queue.claim_lease) if queue.claims_enabled else "",
            "timezone_name": timezone.get_current_timezone_name(),
            "timezone_label": times.zone_label(),
            "mode_help": _MODE_HELP[queue.claim],
            # Bulk money actions on this queue: a preview, then a TOTP code (bulk).
            "money_actions": [
                action for offer in money_actions.values() for action in offer(queue, request)
            ],
        }
        return admin_page(self, request, QUEUE_TEMPLATE, f"Work queue: {queue.label}", context)

    def _act(self, request: HttpRequest, queue: queues.WorkQueue) -> HttpResponse:
        post = request.POST
        outcomes: list[acting.Outcome] = []
        try:
            if post.get("next"):
                outcomes = [self._claim_next(request, queue)]
            elif post.get("row_action"):
                action, _, rest = post["row_action"].partition(":")
                item_id, _, resolution = rest.partition(":")
                outcomes = acting.act(
                    queue.name,
                    action,
                    [_item_id(item_id)],
                    request.user,
                    resolution=resolution or None,
                )
            else:
                action, _, resolution = post.get("action", "").partition(":")
                ids = [_item_id(i) for i in post.getlist("item")]
                if not ids:
                    raise InvalidInput("Tick at least one item first.", code="selection-empty")
                outcomes = acting.act(
                    queue.name, action, ids, request.user, resolution=resolution or None
                )
        except LitejobsError as error:
            return self._answer(request, [], error=error)
        return self._answer(request, outcomes)

    def _claim_next(self, request: HttpRequest, queue: queues.WorkQueue) -> acting.Outcome:
        tenant = request.POST.get("tenant", "").strip() or None
        item = commands.claim_next(queue.name, request.user, tenant=tenant)
        if item is None:
            return acting.Outcome(0, False, "No unclaimed item is left.", "queue-empty")
        return acting.Outcome(
            item.pk,
            True,
            f"You hold item #{item.pk} until {_local(item.claim_expires_at, clock.now())}; it "
            "is marked below.",
            item=item,
        )

    def _answer(
        self,
        request: HttpRequest,
        outcomes: Sequence[acting.Outcome],
        *,
        error: LitejobsError | None = None,
    ) -> HttpResponse:
        """JSON for the page's script (it redraws the rows); else messages and a redirect.
        Either way people read sentences: each refusal's code travels beside it."""
        if "application/json" in request.headers.get("Accept", ""):
            return JsonResponse(
                {
                    "error": error.args[0] if error else "",
                    "error_code": error.code if error else "",
                    "results": [
                        {"id": o.item_id, "ok": o.ok, "code": o.code, "message": o.message}
                        for o in outcomes
                    ],
                    "items": [listing.as_event(o.item) for o in outcomes if o.item],
                    "now": clock.now().isoformat(),
                },
                status=400 if error else 200,
            )
        if error:
            refused_error(request, error)
        done = [o for o in outcomes if o.ok]
        declined = [o for o in outcomes if not o.ok]
        if len(done) == 1:
            messages.success(request, done[0].message)
        elif done:
            ids = ", ".join(f"#{o.item_id}" for o in done[:20]) + (" …" if len(done) > 20 else "")
            messages.success(request, f"Done for {len(done)} items: {ids}.")
        for outcome in declined[:10]:
            refused(request, outcome.message, outcome.code)
        if len(declined) > 10:
            messages.error(request, f"… and {len(declined) - 10} more refused.")
        anchor = f"#item-{done[0].item_id}" if len(done) == 1 else ""
        return HttpResponseRedirect(request.get_full_path() + anchor)


_MODE_HELP = {
    "disabled": "Claims are off in this queue: resolve items directly.",
    "optional": "Claim an item to hold it while you work: nobody else can act on it while your "
    "claim lasts. Unclaimed items may be resolved directly.",
    "required": "Claim an item before you act on it: only the holder of a live claim can "
    "resolve it.",
}


def _int(value: Any, allowed: tuple[int, ...]) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return allowed[0]
    return number if number in allowed else allowed[0]


def _item_id(value: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"{value!r} is not a work item id.", code="item-invalid") from None
