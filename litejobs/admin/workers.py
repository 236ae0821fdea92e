"""Live workers in the admin: who is serving which queues, and what each one holds now."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from ..conf import settings
from ..core import clock
from ..models import Worker
from .base import ReadOnlyAdmin

#: Who the worker is and how long it has lived: its row in the list and the top of its page.
_IDENTITY = ("id", "host", "pid", "queues_label", "concurrency", "started_at", "last_heartbeat")


@admin.register(Worker)
class WorkerAdmin(ReadOnlyAdmin):
    """``runworker`` processes whose lease is current; a lost worker drops off by itself."""

    list_display = (*_IDENTITY, "in_flight_count", "stopping_label")
    list_per_page = 100
    show_full_result_count = False
    ordering = ("-started_at",)
    actions = None
    fields = (*_IDENTITY, "lease_expires_at", "stopping_label", "in_flight")
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        """Only workers whose lease has not lapsed: the others are gone (or cut off)."""
        now = clock.database_now(settings.DATABASE)  # leases run on the database's clock
        return super().get_queryset(request).filter(lease_expires_at__gt=now)

    @admin.display(description="queues")
    def queues_label(self, obj: Worker) -> str:
        """The queues it serves; ``all`` when started without ``--queues``."""
        return ", ".join(obj.queues) if obj.queues else "all"

    @admin.display(description="in flight")
    def in_flight_count(self, obj: Worker) -> int:
        """Jobs it held at its last heartbeat."""
        return len(obj.in_flight or [])

    @admin.display(description="stopping", ordering="stopping")
    def stopping_label(self, obj: Worker) -> str:
        """``no`` (the normal case) or ``yes`` in words: a red cross would read as a fault."""
        return "yes" if obj.stopping else "no"
