"""Each report's limits in the admin, as setting rows an operator changes without a deploy:
durations typed as "31d", sizes as "50MB", changed by users with the change permission on
report limits, with a reason; the operator action log (``litejobs.reports.operations``) keeps
who, why and each value's old and new. A new request and a new run read them."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse

from ..admin.base import AdminPages, acted_by
from ..core.durations import format_duration, parse_duration
from ..core.errors import InvalidInput
from ..core.sizes import format_size, parse_size
from ..jobs.actionlog import REASON_MAX, Actor
from ..models import ReportLimits
from . import limits, operations
from .declarations import DURATION_MOST, reports


def duration_text(value: timedelta | None) -> str:
    """A limit's duration as people read it; ``-`` for none."""
    return "-" if value is None else format_duration(value)


#: A duration as ``format_duration`` writes it: one or more amounts with their units.
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")


class DurationInput(forms.DurationField):
    """A duration as people write it ("31d", "5m", "1h30m") or as Django reads one
    ("1 02:00:00", "P1DT2H"); more than zero, and at most ``most``."""

    def __init__(self, *, most: timedelta, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.most = most

    def prepare_value(self, value: Any) -> Any:
        """A stored duration as people write it."""
        return format_duration(value) if isinstance(value, timedelta) else value

    def to_python(self, value: Any) -> timedelta | None:
        """The duration typed, in either form."""
        if value in self.empty_values:
            return None
        try:
            found = _written(str(value)) or super().to_python(value)
        except ValidationError:
            found = None
        if found is None or found <= timedelta(0):
            raise ValidationError(
                "Enter a duration of more than zero, such as 31d, 5m or 1h30m (or 1 00:00:00).",
                code="invalid",
            )
        if found > self.most:
            raise ValidationError(
                f"Enter a duration of at most {format_duration(self.most)}.", code="max_value"
            )
        return found


def _written(text: str) -> timedelta | None:
    """A duration as ``format_duration`` writes it ("1h30m"), or None."""
    compact = text.replace(" ", "")
    if not compact or _DURATION_PART.sub("", compact):
        return None
    parts = _DURATION_PART.findall(compact)
    return sum((parse_duration(f"{amount}{unit}") for amount, unit in parts), timedelta(0))


class SizeInput(forms.CharField):
    """A size as people write it ("50MB", "500KB") or a number of bytes."""

    def prepare_value(self, value: Any) -> Any:
        """A stored size as people write it, when that says it exactly."""
        if isinstance(value, int) and parse_size(format_size(value)) == value:
            return format_size(value)
        return value

    def to_python(self, value: Any) -> int | None:  # type: ignore[override]  # bytes, where CharField answers text
        """The number of bytes typed."""
        text = super().to_python(value)
        if not text:
            return None
        try:
            return parse_size(text.strip(), name="max_bytes")
        except InvalidInput as error:
            raise ValidationError(error.args[0]) from None


def _help(name: str) -> str:
    return str(getattr(ReportLimits._meta.get_field(name), "help_text", ""))


class LimitsForm(forms.ModelForm):
    """A report's limits as an operator types them: durations as "31d", sizes as "50MB",
    counts within the bounds a declaration may state."""

    max_range = DurationInput(
        required=False,
        most=DURATION_MOST["max_range"],
        help_text=f"{_help('max_range')} Empty: the report takes no range. Such as 31d.",
    )
    max_rows = forms.IntegerField(min_value=1, max_value=10**10, help_text=_help("max_rows"))
    max_seconds = DurationInput(
        most=DURATION_MOST["max_seconds"], help_text=f"{_help('max_seconds')} Such as 5m."
    )
    max_concurrent = forms.IntegerField(
        min_value=1, max_value=1000, help_text=_help("max_concurrent")
    )
    max_bytes = SizeInput(help_text=f"{_help('max_bytes')} Such as 50MB.")
    lifetime = DurationInput(
        most=DURATION_MOST["lifetime"], help_text=f"{_help('lifetime')} Such as 1h."
    )
    request_budget = forms.IntegerField(
        min_value=1, max_value=100_000, help_text=_help("request_budget")
    )
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        max_length=REASON_MAX,
        help_text="Why you change them: the operator action log keeps it with your name and "
        "each value's old and new.",
    )

    class Meta:
        model = ReportLimits
        fields = operations.SETTINGS


@admin.register(ReportLimits)
class ReportLimitsAdmin(AdminPages):
    """Every declared report's limits (its declaration seeds the row), changed by users with
    the change permission on report limits; a new request and a new run read them."""

    form = LimitsForm
    #: The limits as people read them.
    shown = (
        "range_shown",
        "max_rows_shown",
        "seconds_shown",
        "max_concurrent",
        "bytes_shown",
        "lifetime_shown",
        "request_budget",
    )
    list_display = ("report", *shown, "updated_by", "updated_at")
    list_per_page = 100
    actions = None
    editable = (*LimitsForm.Meta.fields, "reason")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        """The values as people read them for users who may not change them; for the others,
        only what no one types (the limits themselves are inputs)."""
        fixed = ("report", "declared", "updated_by", "updated_at")
        return fixed if self.has_change_permission(request, obj) else (*fixed, *self.shown)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        """The limits as inputs for users who may change them, as people read them for the
        others; then the declaration's values and who changed the row last."""
        values = self.editable if self.has_change_permission(request, obj) else self.shown
        return ("report", *values, "declared", "updated_by", "updated_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Never: each declared report's row is seeded from its declaration."""
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Never: a deleted row would come back from the declaration at the next read."""
        return False

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """Every declared report's row (seeded here if it has none yet)."""
        if self.has_view_or_change_permission(request):
            limits.seed_all()
        return super().changelist_view(request, extra_context)

    def save_model(self, request: HttpRequest, obj: ReportLimits, form: Any, change: bool) -> None:
        """Save the limits with who changed them and when, logged with the reason and each
        value's old and new (``litejobs.reports.operations.change_limits``)."""
        actor = Actor(acted_by(request), request.user.pk, form.cleaned_data["reason"])
        operations.change_limits(obj, actor)

    @admin.display(description="max range")
    def range_shown(self, obj: ReportLimits) -> str:
        """The longest range a request may ask for."""
        return duration_text(obj.max_range)

    @admin.display(description="max rows")
    def max_rows_shown(self, obj: ReportLimits) -> str:
        """Rows a run may write."""
        return f"{obj.max_rows:,}"

    @admin.display(description="max seconds")
    def seconds_shown(self, obj: ReportLimits) -> str:
        """How long a run may run."""
        return duration_text(obj.max_seconds)

    @admin.display(description="max bytes")
    def bytes_shown(self, obj: ReportLimits) -> str:
        """How large an output may grow."""
        return format_size(obj.max_bytes)

    @admin.display(description="lifetime")
    def lifetime_shown(self, obj: ReportLimits) -> str:
        """How long a finished output is offered."""
        return duration_text(obj.lifetime)

    @admin.display(description="as declared")
    def declared(self, obj: ReportLimits) -> str:
        """The declaration's own values (what the row was seeded with)."""
        declaration = reports.get(obj.report)
        if declaration is None:
            return "- (no installed app declares this report any more)"
        stated = declaration.limits.describe()
        stated["request_budget"] = str(declaration.request_budget)
        return ", ".join(f"{name} {value}" for name, value in stated.items())
