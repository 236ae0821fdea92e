"""Refusals in the admin's own chrome: a litejobs admin page that answers 403 or 404 says why
and offers the ways back its viewer may follow, under the admin's header and breadcrumbs,
rather than the project's bare error page.

Every litejobs model admin serves its views through ``in_chrome`` (``base.AdminPages``): a
``PermissionDenied`` or ``Http404`` a view raises becomes ``refused.html`` with the same
status. A signed-out visitor never gets here (the admin sends them to its login page first);
the page still offers that login page should its session end meanwhile.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse

TEMPLATE = "admin/litejobs/refused.html"

View = Callable[..., HttpResponse]


def in_chrome(model_admin: admin.ModelAdmin[Any], view: View) -> View:
    """``view``, its 403 and 404 answered as ``refused.html`` pages of ``model_admin``."""

    @wraps(view)
    def answered(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except PermissionDenied as refusal:
            said, code = _said(refusal)
            why = said or _forbidden_why(model_admin, request)
            return page(model_admin, request, 403, why, code)
        except Http404 as missing:
            said, code = _said(missing)
            return page(model_admin, request, 404, said or _missing_why(model_admin), code)

    return answered


def page(
    model_admin: admin.ModelAdmin[Any],
    request: HttpRequest,
    status: int,
    why: str,
    code: str = "",
) -> TemplateResponse:
    """The refusal page: ``why`` (``code``, when it has one, in its ``data-code``), and the
    ways back this viewer may follow."""
    site = model_admin.admin_site
    opts = model_admin.opts
    context = {
        **site.each_context(request),
        "title": "Not allowed" if status == 403 else "Not found",
        "subtitle": None,
        "opts": opts,
        "why": why,
        "code": code,
        "ways": ways_back(model_admin, request),
        "login_url": f"{reverse(f'{site.name}:login')}?next={request.path}",
        "status": status,
    }
    request.current_app = site.name
    return TemplateResponse(request, TEMPLATE, context, status=status)


def ways_back(model_admin: admin.ModelAdmin[Any], request: HttpRequest) -> list[tuple[str, str]]:
    """Links the viewer may follow from here, nearest first: this model's list, the litejobs
    dashboard and model list, the admin's home."""
    site, opts = model_admin.admin_site, model_admin.opts
    if not request.user.is_authenticated:
        return []
    found = []
    if model_admin.has_view_or_change_permission(request):
        url = reverse(f"{site.name}:{opts.app_label}_{opts.model_name}_changelist")
        found.append((str(opts.verbose_name_plural).capitalize(), url))
    if request.user.has_module_perms(opts.app_label):
        url = reverse(f"{site.name}:app_list", kwargs={"app_label": opts.app_label})
        found.append((f"The {opts.app_config.verbose_name} pages you may open", url))
    found.append(("Home", reverse(f"{site.name}:index")))
    return found


#: A litejobs error's code as ``str()`` prefixes it: the page tells the sentence (the code rides
#: in the page's ``data-code``, for operators and scripts).
CODED = re.compile(r"^\[(?P<code>[a-z0-9-]+)\]\s*")


def _said(error: Exception) -> tuple[str, str]:
    """What the exception says (Django's own say nothing), and the code it carries."""
    said = " ".join(str(arg) for arg in error.args if isinstance(arg, str)).strip()
    coded = CODED.match(said)
    if coded is None:
        return said, ""
    return said[coded.end() :], coded["code"]


def _forbidden_why(model_admin: admin.ModelAdmin[Any], request: HttpRequest) -> str:
    opts = model_admin.opts
    who = request.user.get_username()
    if not model_admin.has_view_or_change_permission(request):
        return (
            f"Your account ({who}) may not see {opts.verbose_name_plural}: that needs the "
            f"permission “{opts.app_label} | {opts.verbose_name} | Can view "
            f"{opts.verbose_name}”. Ask an administrator for it if you need this page."
        )
    return (
        f"Your account ({who}) may see {opts.verbose_name_plural} but not do this to them: "
        "that needs a permission to change them. Ask an administrator for it if you need to."
    )


def _missing_why(model_admin: admin.ModelAdmin[Any]) -> str:
    return (
        f"There is nothing here among the {model_admin.opts.verbose_name_plural}: what this "
        "address named may have been deleted, purged after its retention, or mistyped."
    )
