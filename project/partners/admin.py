"""The partner's received webhooks in the admin, read-only (they arrive over HTTP)."""

from django.contrib import admin

from .models import ReceivedWebhook


@admin.register(ReceivedWebhook)
class ReceivedWebhookAdmin(admin.ModelAdmin):
    list_display = ("id", "topic", "event_id", "delivery", "signed_at", "received_at")
    list_filter = ("topic",)
    readonly_fields = ("delivery", "event_id", "topic", "data", "signed_at", "received_at")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
