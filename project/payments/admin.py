"""Disputes in the admin, read-only: staff work them through the ``disputes`` work queue."""

from django.contrib import admin

from .models import Dispute


@admin.register(Dispute)
class DisputeAdmin(admin.ModelAdmin):
    list_display = ("reference", "amount", "currency", "reason", "opened_at", "evidence_provided")
    list_filter = ("currency", "evidence_provided")
    search_fields = ("reference", "customer_email")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
