"""Disputes in the admin, read-only: staff work them through the ``disputes`` work queue, and a
dispute's own page shows who holds it and the resolutions made (``WorkItemsShown``)."""

from django.contrib import admin

from litejobs.workqueues.admin import WorkItemsShown
from project.demo.readonly import ReadOnlyAdmin

from .models import Dispute


@admin.register(Dispute)
class DisputeAdmin(WorkItemsShown, ReadOnlyAdmin):
    list_display = ("reference", "amount", "currency", "reason", "opened_at", "evidence_provided")
    list_filter = ("currency", "evidence_provided")
    search_fields = ("reference", "customer_email")
