"""Short-lived signed download links of report outputs, made with Django's signing.

A link names the run, its tenant and the instant it expires; the signature (under
``SECRET_KEY`` and a salt of its own) makes a changed value unreadable. Reading a link checks
the signature only: the view that serves it checks its expiry, the user's permission and
tenant, and the run's state.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from django.core import signing
from django.urls import NoReverseMatch, reverse

SALT = "litejobs.reports.download"
#: The URL names that serve a link: litejobs' own views (``include("litejobs.urls")``), else
#: the admin's.
URL_NAMES = ("litejobs:report-download", "admin:litejobs_reportrun_download")


@dataclass(frozen=True)
class Link:
    """What a download link says."""

    run_id: int
    tenant: str
    expires: datetime


def sign(link: Link) -> str:
    """The link's signed token."""
    return signing.dumps(
        [link.run_id, link.tenant, int(link.expires.timestamp())], salt=SALT, compress=True
    )


def read(token: str) -> Link:
    """The link a token says; ``signing.BadSignature`` for a changed or made-up one."""
    run_id, tenant, expires = signing.loads(token, salt=SALT)
    if not isinstance(run_id, int) or not isinstance(tenant, str) or not isinstance(expires, int):
        raise signing.BadSignature("a download link names a run, its tenant and an expiry")
    return Link(run_id, tenant, datetime.fromtimestamp(expires, tz=UTC))


def url(token: str) -> str:
    """The path that serves ``token``: litejobs' views when the URLconf includes them, else
    the admin's download view."""
    for name in URL_NAMES:
        try:
            return reverse(name, args=[token])
        except NoReverseMatch:
            continue
    raise NoReverseMatch(
        "No URL serves report downloads: add path('litejobs/', include('litejobs.urls')) "
        "to your URLconf, or the admin."
    )
