"""``{{ instant|when }}`` and ``{{ instant|when_ago }}``: an instant in a litejobs admin
template as every litejobs page writes it (``litejobs.admin.base.instant_html``: to the second,
with its zone; the second with how far from now beside it)."""

from __future__ import annotations

from datetime import datetime

from django import template

from ..admin.base import instant_html

register = template.Library()


@register.filter
def when(instant: datetime | None) -> str:
    """``13:00:05 UTC`` (``-`` for none), the full timestamp on hover."""
    return "-" if instant is None else instant_html(instant)


@register.filter
def when_ago(instant: datetime | None) -> str:
    """``13:00:05 UTC (4m 10s ago)`` (``-`` for none)."""
    return "-" if instant is None else instant_html(instant, ago=True)
