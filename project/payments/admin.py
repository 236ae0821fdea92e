"""Disputes in the admin, read-only: staff work them through the ``disputes`` work queue."""

from django.contrib import admin

from project.demo.readonly import ReadOnlyAdmin

from .models import Dispute


@admin.register(Dispute)
class DisputeAdmin(ReadOnlyAdmin):
    list_display = ("reference", "amount", "currency", "reason", "opened_at", "evidence_provided")
    list_filter = ("currency", "evidence_provided")
    search_fields = ("reference", "customer_email")
