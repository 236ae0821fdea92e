"""A report's limits and request budget as setting rows (``ReportLimits``): the declaration
seeds the row the first time the report is read, and from then on the row is what counts, so
an operator changes a bound in the admin without a deploy."""

from __future__ import annotations

from ..conf import settings
from ..core import clock
from ..models import ReportLimits
from .declarations import Declaration, reports


def defaults(declaration: Declaration) -> dict[str, object]:
    """The row's values as the declaration states them."""
    limits = declaration.limits
    return {
        "max_range": limits.max_range,
        "max_rows": limits.max_rows,
        "max_seconds": limits.max_seconds,
        "max_concurrent": limits.max_concurrent,
        "max_bytes": limits.max_bytes,
        "lifetime": limits.lifetime,
        "request_budget": declaration.request_budget,
        "updated_at": clock.now(),
        "updated_by": "declaration",
    }


def current(declaration: Declaration) -> ReportLimits:
    """The report's setting row, seeded from its declaration if it has none yet."""
    row, _ = ReportLimits.objects.using(settings.DATABASE).get_or_create(
        report=declaration.name, defaults=defaults(declaration)
    )
    return row


def seed_all() -> int:
    """Give every declared report its setting row (the admin lists them); answers how many
    were new."""
    existing = set(ReportLimits.objects.using(settings.DATABASE).values_list("report", flat=True))
    new = [
        ReportLimits(report=d.name, **defaults(d)) for d in reports.all() if d.name not in existing
    ]
    ReportLimits.objects.using(settings.DATABASE).bulk_create(new, ignore_conflicts=True)
    return len(new)
