"""Webhooks in the admin (their ``Feature.admin``).

Webhook endpoints are edited here (validated like ``litejobs.webhooks.create_endpoint``: URL,
address policy, declared topics) and enabled or disabled with the functions the code uses.
Deliveries are read-only, with a redeliver action that retries the delivery's job through
``litejobs.jobs.operations``.
"""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html

from ..admin.base import ACTION_LIMIT, AdminPages, ReadOnlyAdmin, acted_by, refused_error
from ..admin.jobs import CappedCountPaginator
from ..admin.reasons import ask_reason, selected_hidden
from ..core import clock
from ..core.payloads import display_url
from ..exceptions import LitejobsError
from ..jobs import operations
from ..models import (
    Job,
    OutboxMessage,
    WebhookDelivery,
    WebhookEndpoint,
)
from ..models.webhooks import SECRET_MAX
from ..outbox.admin import TopicFilter
from ..outbox.topics import declared_topics
from . import endpoints
from .delivery import deliver


class EndpointForm(forms.ModelForm):
    """An endpoint as an operator writes it: topics chosen among the declared ones, and a
    write-only secret.

    A saved secret is never rendered (a page, a screenshot or a cached response would give the
    key that signs every event): the change form shows an empty password field, and leaving it
    empty keeps the current secret. The add form proposes a freshly generated one to copy to
    the receiver before saving."""

    # Explicit scheme: a URL typed without one is https (Django 5.2 and 6 agree then).
    url = forms.URLField(
        assume_scheme="https", max_length=2000, label="URL", help_text="Where events are POSTed."
    )

    topics = forms.MultipleChoiceField(
        widget=forms.CheckboxSelectMultiple,
        help_text="Events of these topics are delivered to this endpoint.",
    )
    secret = forms.CharField(
        required=False,
        max_length=SECRET_MAX,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="The signing secret the receiver verifies with. It is never shown again once "
        "saved: leave this empty to keep the current one, or type a new one to rotate it.",
    )

    class Meta:
        model = WebhookEndpoint
        fields = ("url", "topics", "tenant", "description", "secret")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [("*", "every topic (*)")] + [
            (t.name, f"{t.name} — {t.description}" if t.description else t.name)
            for t in declared_topics()
        ]
        known = {value for value, _ in choices}
        # A topic no longer declared stays visible, so the operator can see and drop it.
        for stale in self.instance.topics or []:
            if stale not in known:
                choices.append((stale, f"{stale} (no longer declared)"))
        if "topics" in self.fields:  # absent from a viewer's read-only form
            cast(forms.MultipleChoiceField, self.fields["topics"]).choices = choices
        if "secret" in self.fields:
            self.initial.pop("secret", None)  # never the saved one, whatever the widget
            if self.instance.pk is None:  # a new endpoint: propose one to copy now
                self.fields["secret"].widget = forms.TextInput(attrs={"autocomplete": "off"})
                self.fields["secret"].initial = endpoints.new_secret()
                self.fields["secret"].help_text = (
                    "The signing secret the receiver verifies with: copy this generated one to "
                    "the receiver now (or type your own). It is never shown again once saved."
                )

    def clean_secret(self) -> str:
        """Empty: generate one (new endpoints) or keep the current one (existing)."""
        secret = self.cleaned_data.get("secret") or ""
        if not secret:
            return self.instance.secret or endpoints.new_secret()
        return secret


#: What a user who may only view an endpoint is shown of it, as text (topics comma-separated).
_VIEWER_FIELDS = ("shown_url", "topics_label", "tenant", "description")


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(AdminPages):
    """Endpoints: add and edit them (validated), enable or disable them with a reason."""

    form = EndpointForm
    list_display = (
        "id",
        "shown_url",
        "topics_label",
        "tenant",
        "enabled",
        "consecutive_failures",
        "last_success_at",
        "disabled_label",
    )
    list_filter = ("enabled",)
    list_per_page = 100
    ordering = ("id",)
    actions = ("enable_endpoints", "disable_endpoints")
    readonly_fields = (
        "enabled",
        "consecutive_failures",
        "failing_since",
        "last_success_at",
        "disabled_reason",
        "disabled_by",
        "disabled_at",
        "created_at",
        "deliveries_link",
    )

    def get_fieldsets(self, request: HttpRequest, obj: WebhookEndpoint | None = None) -> Any:
        """The endpoint's fields; its state once it exists. Users who may only view it see
        neither the secret nor the URL's path (which may carry a token)."""
        main: tuple[str | None, dict[str, Any]]
        if obj is not None and not self.has_change_permission(request, obj):
            main = (None, {"fields": _VIEWER_FIELDS})
        else:
            main = (None, {"fields": ("url", "topics", "tenant", "description", "secret")})
        if obj is None:
            return (main,)
        return (main, ("State", {"fields": self._instants(self.readonly_fields)}))

    def get_readonly_fields(
        self, request: HttpRequest, obj: WebhookEndpoint | None = None
    ) -> tuple[Any, ...]:
        """The state (and, for viewers, everything they are shown)."""
        state = tuple(super().get_readonly_fields(request, obj))
        if obj is not None and not self.has_change_permission(request, obj):
            return (*state, *_VIEWER_FIELDS)
        return state

    def save_model(
        self, request: HttpRequest, obj: WebhookEndpoint, form: Any, change: bool
    ) -> None:
        """A new endpoint gets its creation time; changes are logged without the secret."""
        if not change:
            obj.created_at = clock.now()
        super().save_model(request, obj, form, change)
        endpoints.logger.info(
            "webhook endpoint %s id=%s url=%s by=%s",
            "changed" if change else "created",
            obj.pk,
            display_url(obj.url),
            acted_by(request),
        )

    def has_operate_permission(self, request: HttpRequest) -> bool:
        """Enable and disable need the endpoint ``change`` permission."""
        return request.user.has_perm("litejobs.change_webhookendpoint")

    @admin.display(description="URL")
    def shown_url(self, obj: WebhookEndpoint) -> str:
        """Scheme and host only: a URL's path may carry a token."""
        return display_url(obj.url)

    @admin.display(description="topics")
    def topics_label(self, obj: WebhookEndpoint) -> str:
        """The topics it receives."""
        return ", ".join(obj.topics)

    @admin.display(description="disabled")
    def disabled_label(self, obj: WebhookEndpoint) -> str:
        """Who disabled it and why."""
        if obj.enabled:
            return "-"
        return f"by {obj.disabled_by or '?'}: {obj.disabled_reason[:120]}"

    @admin.display(description="deliveries")
    def deliveries_link(self, obj: WebhookEndpoint) -> str:
        """Its deliveries, in the delivery listing."""
        url = reverse("admin:litejobs_webhookdelivery_changelist")
        return format_html('<a href="{}?endpoint__id__exact={}">deliveries</a>', url, obj.pk)

    @admin.action(description="Enable selected endpoints", permissions=["operate"])
    def enable_endpoints(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        """Deliver to them again with a fresh failure streak (skipped deliveries stay so)."""
        by = acted_by(request)
        for endpoint in queryset[:ACTION_LIMIT]:
            try:
                endpoints.enable_endpoint(endpoint.pk, by=by, user_id=request.user.pk)
            except LitejobsError as error:
                refused_error(request, error)
            else:
                self.message_user(
                    request,
                    f"Endpoint {endpoint.pk} is enabled; deliveries skipped while it was "
                    "disabled can be sent again with the deliveries' redeliver action.",
                    messages.SUCCESS,
                )

    @admin.action(description="Disable selected endpoints", permissions=["operate"])
    def disable_endpoints(
        self, request: HttpRequest, queryset: QuerySet[Any]
    ) -> HttpResponse | None:
        """Ask for a reason, then stop delivering to them."""
        rows = list(queryset[:ACTION_LIMIT])

        def apply(reason: str) -> None:
            by = acted_by(request)
            for endpoint in rows:
                try:
                    endpoints.disable_endpoint(
                        endpoint.pk, reason=reason, by=by, user_id=request.user.pk
                    )
                except LitejobsError as error:
                    refused_error(request, error)
                else:
                    self.message_user(
                        request, f"Endpoint {endpoint.pk} is disabled.", messages.SUCCESS
                    )

        return ask_reason(
            self,
            request,
            rows,
            title="Disable webhook endpoints",
            intro="Deliveries to them are skipped until they are enabled again.",
            hidden=selected_hidden("disable_endpoints", rows),
            apply=apply,
        )


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    """Deliveries: one per endpoint and message, with the last attempt's outcome."""

    list_display = (
        "id",
        "endpoint",
        "message_id",
        "topic",
        "state",
        "attempts",
        "last_status",
        "last_attempt_at",
        "delivered_at",
    )
    list_filter = ("state", TopicFilter, "endpoint")
    list_select_related = ("endpoint",)
    paginator = CappedCountPaginator
    show_full_result_count = False
    list_per_page = 50
    actions = ("redeliver",)
    fields = (
        "id",
        "endpoint",
        "message_link",
        "topic",
        "state",
        "attempts",
        "last_status",
        "last_error",
        "last_attempt_at",
        "delivered_at",
        "created_at",
        "finished_at",
        "job_link",
    )
    readonly_fields = fields

    @admin.display(description="message")
    def message_link(self, obj: WebhookDelivery) -> str:
        """The outbox message (until purged)."""
        if not OutboxMessage.objects.filter(pk=obj.message_id).exists():
            return f"{obj.message_id} (purged)"
        url = reverse("admin:litejobs_outboxmessage_change", args=[obj.message_id])
        return format_html('<a href="{}">{}</a>', url, obj.message_id)

    @admin.display(description="job")
    def job_link(self, obj: WebhookDelivery) -> str:
        """The delivery job, with its retries and errors."""
        job = _delivery_job(obj)
        if job is None:
            return "-"
        url = reverse("admin:litejobs_job_change", args=[job.pk])
        return format_html('<a href="{}">job {}</a> ({})', url, job.pk, job.state)

    @admin.action(description="Redeliver selected deliveries", permissions=["operate"])
    def redeliver(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        """Send them again: retry each delivery's job (``litejobs.jobs.operations.retry``)."""
        by = acted_by(request)
        for delivery in queryset.select_related("endpoint")[:ACTION_LIMIT]:
            job = _delivery_job(delivery)
            if job is None:
                self.message_user(
                    request,
                    f"Delivery {delivery.pk} has no job left (purged); it cannot be resent.",
                    messages.ERROR,
                )
                continue
            try:
                operations.retry(job.pk, by=by)
            except LitejobsError as error:
                self.message_user(request, f"Delivery {delivery.pk}: {error}", messages.ERROR)
                continue
            WebhookDelivery.objects.filter(pk=delivery.pk).update(state="pending", finished_at=None)
            note = "" if delivery.endpoint.enabled else " (its endpoint is disabled: enable it)"
            self.message_user(
                request, f"Delivery {delivery.pk} will be sent again{note}.", messages.SUCCESS
            )


def _delivery_job(delivery: WebhookDelivery) -> Job | None:
    if delivery.job_id is not None:
        job = Job.objects.filter(pk=delivery.job_id).first()
        if job is not None:
            return job
    key = f"webhook:{delivery.endpoint_id}:{delivery.message_id}"
    return Job.objects.filter(name=deliver.name, key=key).order_by("-id").first()
