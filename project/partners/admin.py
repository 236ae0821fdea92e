"""The partner's received webhooks in the admin, read-only (they arrive over HTTP)."""

from django.contrib import admin

from project.demo.readonly import ReadOnlyAdmin

from .models import ReceivedWebhook


@admin.register(ReceivedWebhook)
class ReceivedWebhookAdmin(ReadOnlyAdmin):
    list_display = ("id", "topic", "event_id", "delivery", "signed_at", "received_at")
    list_filter = ("topic",)
    readonly_fields = ("delivery", "event_id", "topic", "data", "signed_at", "received_at")
