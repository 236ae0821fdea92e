"""The reason form operators fill in before an action that is kept in a record (a disable, a
replay): from a changelist action or from a button on a record's page."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db.models import Model
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from .base import admin_page

REASON_TEMPLATE = "admin/litejobs/reason_form.html"


class ReasonForm(forms.Form):
    """The reason an operator gives for a disable or a replay (kept in the record)."""

    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        max_length=1000,
        help_text="Recorded with your name and the time; the next operator reads it.",
    )


def ask_reason(
    model_admin: admin.ModelAdmin[Any],
    request: HttpRequest,
    objects: Sequence[Any],
    *,
    title: str,
    intro: str,
    hidden: list[tuple[str, str]],
    apply: Callable[[str], None],
) -> HttpResponse | None:
    """Render the reason form, or apply ``apply(reason)`` once a valid reason was posted.

    Answers the response to show (the form again), or ``None`` when applied.
    """
    if request.method == "POST" and "apply" in request.POST:
        form = ReasonForm(request.POST)
        if form.is_valid():
            apply(form.cleaned_data["reason"])
            return None
    else:
        form = ReasonForm()
    context = {"intro": intro, "objects": objects, "form": form, "hidden": hidden}
    return admin_page(model_admin, request, REASON_TEMPLATE, title, context)


def selected_hidden(action: str, objects: Iterable[Any]) -> list[tuple[str, str]]:
    """The hidden inputs that post a changelist action back for the same selected rows."""
    return [("action", action)] + [(ACTION_CHECKBOX_NAME, str(o.pk)) for o in objects]


def ask_reason_on_page(
    model_admin: admin.ModelAdmin[Any],
    request: HttpRequest,
    row: Model,
    *,
    title: str,
    intro: str,
    apply: Callable[[str], None],
) -> HttpResponse:
    """A record page's button that needs a reason: the form, then ``apply`` and back to the
    record's page."""
    response = ask_reason(
        model_admin, request, [row], title=title, intro=intro, hidden=[], apply=apply
    )
    opts = model_admin.opts
    change = reverse(
        f"{model_admin.admin_site.name}:{opts.app_label}_{opts.model_name}_change", args=[row.pk]
    )
    return response or HttpResponseRedirect(change)
