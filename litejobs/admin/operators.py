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

#: Job ids a row's "on" column lists (the row's page lists every one).
JOBS_SHOWN = 20


#: The order a filter's conditions read in (the database keeps its keys in its own order):
#: a bulk action's job conditions first, its limit last.
FILTER_ORDER = ("state", "queue", "name", "tenant", "ids")


def _in_order(item: tuple[str, Any]) -> tuple[bool, int]:
    key = item[0]
    return key == "limit", FILTER_ORDER.index(key) if key in FILTER_ORDER else len(FILTER_ORDER)


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
    fields = ("at", "by", "user_name", "verb", "target", "job_ids", "changed", "affected", "reason")
    readonly_fields = fields

    @admin.display(description="on")
    def target(self, obj: OperatorAction) -> str:
        """The filter matched (the queue of a pause), then the jobs changed, in plain words; a
        long list of jobs is cut here and shown whole on the row's page."""
        words = {"name": "job", "run": "report run", "endpoint": "webhook endpoint"}
        parts = []
        for key, value in sorted((obj.filter or {}).items(), key=_in_order):
            shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
            parts.append(f"limit {shown}" if key == "limit" else f"{words.get(key, key)} {shown}")
        if obj.job_ids:
            ids = ", ".join(str(job_id) for job_id in obj.job_ids[:JOBS_SHOWN])
            more = len(obj.job_ids) - JOBS_SHOWN
            ids += f" and {more} more" if more > 0 else ""
            parts.append(f"job{'s' if len(obj.job_ids) > 1 else ''} {ids}")
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
