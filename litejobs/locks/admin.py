"""The admin's locks page (read-only): every lock key, who holds or last held it, its token,
since and until when; filtered by state (held, released, lapsed) on the database's clock."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Q
from django.http import HttpRequest

from ..admin.base import ChoiceFilter, ReadOnlyAdmin
from ..conf import settings
from ..core import clock
from ..models import Lock
from .operations import state_of

#: A lock's row in the list and the top of its page.
_SHOWN = (
    "key",
    "token",
    "state_label",
    "host",
    "pid",
    "acquired_at",
    "renewed_at",
    "expires_at",
    "released_at",
    "contended_label",
)


class StateFilter(ChoiceFilter):
    """Held now, released, or lapsed (its holder stopped renewing it)."""

    title = "state"
    parameter_name = "state"

    def options(self, request: HttpRequest) -> list[tuple[str, str]]:
        return [("held", "held"), ("released", "released"), ("lapsed", "lapsed")]

    def rows(self, value: str) -> Q:
        now = clock.database_now(settings.DATABASE)
        return {
            "held": Q(released_at__isnull=True, expires_at__gt=now),
            "released": Q(released_at__isnull=False),
            "lapsed": Q(released_at__isnull=True, expires_at__lte=now),
        }.get(value, Q())


@admin.register(Lock)
class LockAdmin(ReadOnlyAdmin):
    """Lock keys across every host; a holder's renewals move ``expires_at`` on."""

    list_display = _SHOWN
    list_filter = (StateFilter,)
    search_fields = ("key",)
    list_per_page = 100
    ordering = ("-acquired_at",)
    actions = None
    fields = _SHOWN
    readonly_fields = fields

    @admin.display(description="state")
    def state_label(self, obj: Lock) -> str:
        """held, released or lapsed, on the database's clock."""
        return state_of(obj, self._now())

    @admin.display(description="waited for")
    def contended_label(self, obj: Lock) -> str:
        """Whether another block waited for this hold, in words: a red icon reads as an error."""
        return "yes" if obj.contended else "no"

    def _now(self) -> Any:
        return clock.database_now(settings.DATABASE)
