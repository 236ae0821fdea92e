"""The download of a report's output through its signed link.

The link only says which run and until when; the download checks everything again: a
signed-in user, the report's permission, the user's tenant against the run's, the run done and
not expired. A refusal answers 403 (anonymous, no permission, expired link) or 404 (a changed
link, another tenant's run, no output), is logged with its code, and serves nothing. The
output streams from storage a part at a time (``FileResponse``) with its media type and a
file name made of the report's name and the run's id.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core import signing
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest

from ..conf import settings
from ..core import clock, links
from ..core.enums import ReportState
from ..models import ReportAudit, ReportRun
from . import output, storage
from .declarations import Declaration, reports
from .errors import ReportDenied
from .requesting import allowed, tenant_of

__all__ = ["download"]

logger = logging.getLogger(__name__)

#: The outcome an audit row records for a download.
DOWNLOADED = "downloaded"


def _refuse(request: HttpRequest, status: int, code: str, run_id: object = "-") -> Exception:
    user = getattr(request, "user", None)
    who = user.get_username() if user is not None and user.is_authenticated else "anonymous"
    logger.warning(
        "Report download refused [%s]: run %s, user %s, from %s",
        code,
        run_id,
        who,
        request.META.get("REMOTE_ADDR", "-"),
    )
    message = f"[{code}] This download is not available."
    return PermissionDenied(message) if status == 403 else Http404(message)


def download(request: HttpRequest, token: str) -> FileResponse:
    """Serve a done run's output to a user who may read it, through an unexpired link."""
    try:
        link = links.read(token)
    except signing.BadSignature:
        raise _refuse(request, 404, "report-link-invalid") from None
    user: Any = request.user
    if not user.is_authenticated:
        raise _refuse(request, 403, "report-permission-denied", link.run_id)
    if link.expires <= clock.now():
        raise _refuse(request, 403, "report-link-expired", link.run_id)
    run = ReportRun.objects.using(settings.DATABASE).filter(pk=link.run_id).first()
    declaration = reports.get(run.report) if run is not None else None
    if run is None or declaration is None or link.tenant != run.tenant:
        raise _refuse(request, 404, "report-run-unknown", link.run_id)
    _check_reader(request, declaration, run)
    if run.state != ReportState.DONE or run.expires_at is None or run.expires_at <= clock.now():
        raise _refuse(request, 404, "report-not-ready", run.pk)
    return _serve(user, declaration, run)


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
    ReportAudit.objects.using(settings.DATABASE).create(
        report=run.report,
        run=run,
        user=user,
        user_name=user.get_username(),
        tenant=run.tenant,
        reason=declaration.audit.reason if declaration.audit else "",
        target=declaration.audit.target if declaration.audit else "",
        parameters=run.parameters,
        row_count=run.row_count,
        outcome=DOWNLOADED,
        at=clock.now(),
    )
    logger.info("Report run #%s of %s downloaded by %s", run.pk, run.report, user.get_username())
    return response
