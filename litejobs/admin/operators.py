"""The operator action log in the admin: read-only, newest first, filtered by verb and who.

Nobody adds, changes or deletes a row here (superusers included), and the database refuses it
anywhere else: it is the record of every change an operator made, from the admin and the CLI
alike.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin

from ..models import OperatorAction
from .base import ReadOnlyAdmin


class WhoFilter(admin.AllValuesFieldListFilter):
    """The ``by`` column's filter, titled "By who" (its field's name would read "By by")."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.title = "who"


@admin.register(OperatorAction)
class OperatorActionAdmin(ReadOnlyAdmin):
    """Who did what, to which jobs or queue, how many it changed, when and why."""

    list_display = ("at", "by", "verb", "target", "changed", "affected", "reason")
    list_filter = ("verb", ("by", WhoFilter))
    search_fields = ("by", "reason")
    ordering = ("-at", "-id")
    times_ago = ("at",)
    date_hierarchy = None
    fields = ("at", "by", "user_name", "verb", "target", "changed", "affected", "reason")
    readonly_fields = fields

    @admin.display(description="on")
    def target(self, obj: OperatorAction) -> str:
        """The jobs named, or the filter matched (the queue of a pause), in plain words."""
        if obj.job_ids:
            ids = ", ".join(str(job_id) for job_id in obj.job_ids)
            return f"job{'s' if len(obj.job_ids) > 1 else ''} {ids}"
        words = {"name": "job", "run": "report run", "endpoint": "webhook endpoint"}
        parts = []
        for key, value in (obj.filter or {}).items():
            shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
            parts.append(f"limit {shown}" if key == "limit" else f"{words.get(key, key)} {shown}")
        return "; ".join(parts) or "-"

    @admin.display(description="user")
    def user_name(self, obj: OperatorAction) -> str:
        """The admin user who acted, named: not a link to the user's page, which few who read
        the log may open."""
        return obj.user.get_username() if obj.user is not None else "-"

    @admin.display(description="changed")
    def changed(self, obj: OperatorAction) -> str:
        """Each setting changed, from its old value to its new one."""
        changes = [f"{field} {old} → {new}" for field, (old, new) in obj.change.items()]
        return "; ".join(changes) or "-"
