"""The download of a report's output through its signed link.

The link only says which run and until when; the download checks everything again: a
signed-in user (else the login page), the report's permission, the user's tenant against the
run's, the run done and not expired. A refusal answers 403 (no permission, expired link) or
404 (a changed link, another tenant's run, no output), is logged with its code, and serves
nothing; an expired link's page says to open the run for a new link, and links to the run's
page when the user may open it. The output streams from storage a part at a time
(``FileResponse``) with its media type and a file name made of the report's name and the
run's id, kept out of every cache.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib import admin
from django.contrib.auth.views import redirect_to_login
from django.core import signing
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse

from ..conf import settings
from ..core import clock
from ..core.enums import ReportState
from ..models import ReportRun
from ..models.reports import DownloadLink, read_link
from . import auditing, output, storage
from .declarations import Declaration, reports
from .errors import ReportDenied
from .requesting import allowed, tenant_of

__all__ = ["download"]

logger = logging.getLogger(__name__)

#: The page of a link past its time.
EXPIRED_TEMPLATE = "admin/litejobs/reportrun/link_expired.html"
#: What that page shows a user who may not use the admin: none of its navigation.
OUTSIDE_THE_ADMIN = {"available_apps": [], "is_nav_sidebar_enabled": False}


def _refuse(request: HttpRequest, status: int, code: str, run_id: object = "-") -> Exception:
    _log_refusal(request, code, run_id)
    message = f"[{code}] This download is not available."
    return PermissionDenied(message) if status == 403 else Http404(message)


def _log_refusal(request: HttpRequest, code: str, run_id: object) -> None:
    user = getattr(request, "user", None)
    who = user.get_username() if user is not None and user.is_authenticated else "anonymous"
    logger.warning(
        "Report download refused [%s]: run %s, user %s, from %s",
        code,
        run_id,
        who,
        request.META.get("REMOTE_ADDR", "-"),
    )


def download(
    request: HttpRequest, token: str, *, site: admin.AdminSite | None = None
) -> HttpResponseBase:
    """Serve a done run's output to a user who may read it, through an unexpired link
    (``site``: the admin site serving it, for the pages of a refusal)."""
    try:
        link = read_link(token)
    except signing.BadSignature:
        raise _refuse(request, 404, "report-link-invalid") from None
    user: Any = request.user
    if not user.is_authenticated:
        _log_refusal(request, "report-login-required", link.run_id)
        return redirect_to_login(request.get_full_path())
    run = ReportRun.objects.using(settings.DATABASE).filter(pk=link.run_id).first()
    if link.expires <= clock.now():
        _log_refusal(request, "report-link-expired", link.run_id)
        return _expired(request, site or admin.site, link, run)
    declaration = reports.get(run.report) if run is not None else None
    if run is None or declaration is None or link.tenant != run.tenant:
        raise _refuse(request, 404, "report-run-unknown", link.run_id)
    _check_reader(request, declaration, run)
    if run.state != ReportState.DONE or run.expires_at is None or run.expires_at <= clock.now():
        raise _refuse(request, 404, "report-not-ready", run.pk)
    return _serve(user, declaration, run)


def _expired(
    request: HttpRequest, site: admin.AdminSite, link: DownloadLink, run: ReportRun | None
) -> HttpResponse:
    """The page of an expired link: open the run for a new link (a link to its page when the
    user may open it in the admin)."""
    request.current_app = site.name
    context = {
        **site.each_context(request),
        **({} if site.has_permission(request) else OUTSIDE_THE_ADMIN),
        "title": "This download link has expired",
        "run_id": link.run_id,
        "run_url": _run_page(request, site, run),
        "code": "report-link-expired",
    }
    return TemplateResponse(request, EXPIRED_TEMPLATE, context, status=403)


def _run_page(request: HttpRequest, site: admin.AdminSite, run: ReportRun | None) -> str:
    """The admin page of ``run`` if this user may open it (what the admin's runs list scopes
    by), else ""."""
    user: Any = request.user
    declaration = reports.get(run.report) if run is not None else None
    if run is None or declaration is None:
        return ""
    may = site.has_permission(request) and (
        user.is_superuser
        or (user.has_perm("litejobs.view_reportrun") and _reads(declaration, user, run))
    )
    if not may:
        return ""
    try:
        return reverse(f"{site.name}:litejobs_reportrun_change", args=[run.pk])
    except NoReverseMatch:
        return ""


def _reads(declaration: Declaration, user: Any, run: ReportRun) -> bool:
    try:
        allowed(declaration, user)
        return tenant_of(declaration, user) == run.tenant
    except ReportDenied:
        return False


def _check_reader(request: HttpRequest, declaration: Declaration, run: ReportRun) -> None:
    try:
        allowed(declaration, request.user)
        tenant = tenant_of(declaration, request.user)
    except ReportDenied as denied:
        raise _refuse(request, 403, denied.code, run.pk) from None
    if tenant != run.tenant:
        raise _refuse(request, 404, "report-tenant-mismatch", run.pk)


def _serve(user: Any, declaration: Declaration, run: ReportRun) -> FileResponse:
    files = storage.get(run.storage)
    joined = storage.Joined(files, storage.parts_of(files, run.output_path))
    response = FileResponse(
        joined,
        as_attachment=True,
        filename=f"{declaration.label}-{run.pk}.{output.extension(declaration)}",
        content_type=output.content_type(declaration),
    )
    response["Content-Length"] = str(run.bytes)
    output.private(response)
    auditing.write(
        declaration,
        user,
        run.tenant,
        run.parameters,
        outcome=auditing.DOWNLOADED,
        row_count=run.row_count,
        run=run,
    )
    logger.info("Report run #%s of %s downloaded by %s", run.pk, run.report, user.get_username())
    return response
