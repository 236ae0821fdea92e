"""Reports' records: each report's limits (setting rows an operator changes in the admin),
the runs the worker writes page by page, and the audit trail of every read (append-only:
the database refuses to change or delete a row).

A ``ReportRun`` records where its output stands: the parts written so far (one per page, in
the run's storage directory) and the primary key its last page ended at, moved in the
statement that records the part, so a run whose worker is killed resumes at its next page.
Only a ``done`` run's output is offered, through a short-lived signed link, until
``expires_at``; the built-in ``litejobs.reports_expire`` schedule removes it after that.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.core import signing
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models import Q
from django.urls import NoReverseMatch, reverse

from ..conf import settings
from ..core import clock
from ..core.durations import format_duration, parse_duration
from ..core.enums import REPORT_ENDINGS, REPORT_LIVE, ReportState
from ..core.errors import InvalidInput, LitejobsError
from .people import person
from .trails import append_only

__all__ = [
    "LINK_TTL_MAX",
    "DownloadLink",
    "ReportAudit",
    "ReportLimits",
    "ReportRun",
    "link_ttl",
    "link_url",
    "read_link",
    "sign_link",
]

#: The longest a download link may live (``ttl=``, ``LITEJOBS["REPORT_LINK_TTL"]``).
LINK_TTL_MAX = timedelta(days=1)


class ReportLimits(models.Model):
    """One report's bounds and request budget: the setting rows its declaration seeds and an
    operator may change (a new run reads them when it is requested and when it runs)."""

    report = models.CharField(max_length=200, unique=True)
    max_range = models.DurationField(
        null=True, blank=True, help_text="The longest end - start a request may ask for."
    )
    max_rows = models.BigIntegerField(help_text="A run past this many rows is stopped.")
    max_seconds = models.DurationField(help_text="A run running longer is stopped.")
    max_concurrent = models.PositiveIntegerField(
        help_text="Runs of this report at once, across every worker; more wait their turn."
    )
    max_bytes = models.BigIntegerField(help_text="A run whose output grows past this is stopped.")
    lifetime = models.DurationField(
        help_text="How long a finished output may be downloaded before it is removed."
    )
    request_budget = models.PositiveIntegerField(
        help_text="Rows a request may answer directly; a larger result runs in the worker."
    )
    updated_at = models.DateTimeField()
    updated_by = models.CharField(max_length=200, blank=True, db_default="")

    class Meta:
        db_table = "litejobs_reportlimits"
        ordering = ["report"]
        verbose_name = "report limits"
        verbose_name_plural = "report limits"
        constraints = [
            models.CheckConstraint(
                condition=Q(max_rows__gte=1)
                & Q(max_bytes__gte=1)
                & Q(max_concurrent__gte=1)
                & Q(request_budget__gte=1),
                name="litejobs_reportlimits_positive",
            )
        ]

    def __str__(self) -> str:
        return f"limits of {self.report}"


class ReportRun(models.Model):
    """One run of a report in the worker: who asked, for what, how far it is, and its output
    (the storage directory of its parts and manifest) once done."""

    id = models.BigAutoField(primary_key=True)
    report = models.CharField(max_length=200)
    state = models.CharField(
        max_length=20, choices=ReportState.choices, db_default=ReportState.QUEUED
    )
    parameters = models.JSONField(default=dict, blank=True)
    requester = person()
    requester_name = models.CharField(max_length=200, blank=True, db_default="")
    tenant = models.CharField(max_length=200, blank=True, db_default="")
    format = models.CharField(max_length=10)
    progress = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        db_default=0,
        help_text="Percent of the estimated rows written so far; empty while the estimate is "
        "unknown (the planner gave none, or the run has already written more rows than it "
        "estimated).",
    )
    estimated_rows = models.BigIntegerField(null=True, blank=True)
    row_count = models.BigIntegerField(db_default=0)
    bytes = models.BigIntegerField(db_default=0)
    parts = models.PositiveIntegerField(
        db_default=0, help_text="Parts written so far: a resumed run writes the next one."
    )
    last_key = models.JSONField(
        null=True,
        blank=True,
        encoder=DjangoJSONEncoder,  # UUID, date and text primary keys as well as numbers
        help_text="The primary key the last written page ended at.",
    )
    output_path = models.CharField(
        max_length=500, blank=True, db_default="", help_text="The output's storage directory."
    )
    storage = models.CharField(max_length=100, db_default="default")
    stop_reason = models.CharField(max_length=50, blank=True, db_default="")
    error = models.TextField(blank=True, db_default="")
    job_id = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    removed_at = models.DateTimeField(
        null=True, blank=True, help_text="When its parts were removed from storage."
    )
    cancelled_by = models.CharField(max_length=200, blank=True, db_default="")

    class Meta:
        db_table = "litejobs_reportrun"
        ordering = ["-id"]
        verbose_name = "report run"
        indexes = [
            models.Index(
                fields=["report"],
                condition=Q(state__in=["queued", "running"]),
                name="litejobs_reportrun_live",
            ),
            models.Index(
                fields=["expires_at"],
                condition=Q(removed_at__isnull=True),
                name="litejobs_reportrun_kept",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.report} #{self.pk}"

    def cancel(self, *, by: str = "") -> bool:
        """Stop the run at its next page; its parts are removed and nothing is offered.
        Answers whether this call cancelled it (False once it has ended)."""
        cancelled = (
            ReportRun.objects.using(self._state.db)
            .filter(pk=self.pk, state__in=REPORT_LIVE)
            .update(state=ReportState.CANCELLED, cancelled_by=by[:200], finished_at=clock.now())
        )
        self.refresh_from_db(fields=["state", "cancelled_by", "finished_at"])
        return cancelled == 1

    def download_url(self, ttl: timedelta | str | float | None = None) -> str:
        """A short-lived signed link to the output, valid for ``ttl`` (by default
        ``LITEJOBS["REPORT_LINK_TTL"]``; at most a day) and never past the output's own
        lifetime, served by litejobs' views or the admin; the download checks the user's
        permission and tenant again. Only a done run's output is offered
        (``report-not-ready``), until its lifetime ends (``report-output-expired``)."""
        lifetime = link_ttl(
            settings.REPORT_LINK_TTL if ttl is None else ttl,
            "LITEJOBS['REPORT_LINK_TTL']" if ttl is None else "ttl",
        )
        now, until = clock.now(), self.expires_at
        if self.state == ReportState.EXPIRED or (
            self.state == ReportState.DONE and (until is None or until <= now)
        ):
            raise LitejobsError(
                f"Report run #{self.pk}'s output was offered until its lifetime ended; a link "
                "to it could only be refused. Request the report again for a new output.",
                code="report-output-expired",
            )
        if self.state != ReportState.DONE or until is None:
            raise LitejobsError(
                f"Report run #{self.pk} is {self.state}: only a done run's output is offered.",
                code="report-not-ready",
            )
        return link_url(sign_link(DownloadLink(self.pk, self.tenant, min(now + lifetime, until))))

    def progress_text(self) -> str:
        """How far the run is, as people read it: a percent of the planner's estimate while
        that is known, the rows written so far when it is not."""
        if self.state in (ReportState.DONE, ReportState.EXPIRED):
            return "100%"
        if self.state == ReportState.QUEUED and not self.row_count:
            return "not started"
        rows = f"{self.row_count:,} rows"
        if self.state not in REPORT_LIVE:
            return f"{rows} written"
        if self.progress is not None and self.estimated_rows:
            return f"{self.progress}% of ~{self.estimated_rows:,} rows"
        if self.estimated_rows:
            return (
                f"{rows} so far; estimate unknown (the planner expected "
                f"~{self.estimated_rows:,}, too few)"
            )
        return f"{rows} so far; estimate unknown"


def link_ttl(value: object, name: str) -> timedelta:
    """How long a download link lives: a duration from 1 second to ``LINK_TTL_MAX``
    (``duration-invalid`` otherwise)."""
    lifetime = parse_duration(value, name=name, allow_zero=False)
    if lifetime > LINK_TTL_MAX:
        raise InvalidInput(
            f"{name} is at most {format_duration(LINK_TTL_MAX)} (a download link is short-lived; "
            f"make a new one when it is needed); got {value!r}.",
            code="duration-invalid",
        )
    return lifetime


# Download links --------------------------------------------------------------------------------
# Short-lived signed links to a run's output, made with Django's signing. A link names the run,
# its tenant and the instant it expires; the signature (under ``SECRET_KEY`` and a salt of its
# own) makes a changed value unreadable. Reading a link checks the signature only: the view
# that serves it checks its expiry, the user's permission and tenant, and the run's state.

LINK_SALT = "litejobs.reports.download"
#: The URL names that serve a link: litejobs' views (``include("litejobs.urls")``), else the
#: admin's.
LINK_URL_NAMES = ("litejobs:report-download", "admin:litejobs_reportrun_download")


@dataclass(frozen=True)
class DownloadLink:
    """What a download link says."""

    run_id: int
    tenant: str
    expires: datetime


def sign_link(link: DownloadLink) -> str:
    """The link's signed token."""
    return signing.dumps(
        [link.run_id, link.tenant, int(link.expires.timestamp())], salt=LINK_SALT, compress=True
    )


def read_link(token: str) -> DownloadLink:
    """The link a token says; ``signing.BadSignature`` for a changed or made-up one."""
    run_id, tenant, expires = signing.loads(token, salt=LINK_SALT)
    if not isinstance(run_id, int) or not isinstance(tenant, str) or not isinstance(expires, int):
        raise signing.BadSignature("a download link names a run, its tenant and an expiry")
    return DownloadLink(run_id, tenant, datetime.fromtimestamp(expires, tz=UTC))


def link_url(token: str) -> str:
    """The path that serves ``token``: litejobs' views when the URLconf includes them, else
    the admin's download view."""
    for name in LINK_URL_NAMES:
        try:
            return reverse(name, args=[token])
        except NoReverseMatch:
            continue
    raise NoReverseMatch(
        "No URL serves report downloads: add path('litejobs/', include('litejobs.urls')) "
        "to your URLconf, or the admin."
    )


class ReportAudit(models.Model):
    """The audit trail of report reads: who, why, what, with which parameters, how many rows,
    when. A row is written (never changed: triggers refuse it) when a request is served,
    queues a run or is refused, when a run ends, and at each download."""

    id = models.BigAutoField(primary_key=True)
    report = models.CharField(max_length=200)
    run = models.ForeignKey(
        ReportRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="audits"
    )
    user = person()
    user_name = models.CharField(max_length=200, blank=True, db_default="")
    tenant = models.CharField(max_length=200, blank=True, db_default="")
    reason = models.CharField(max_length=500)
    target = models.CharField(max_length=200)
    parameters = models.JSONField(default=dict, blank=True)
    row_count = models.BigIntegerField(null=True, blank=True)
    outcome = models.CharField(max_length=20, blank=True, db_default="")
    code = models.CharField(
        max_length=50,
        blank=True,
        db_default="",
        help_text="Why a request was refused or a run stopped or failed (its error code).",
    )
    at = models.DateTimeField()

    class Meta:
        db_table = "litejobs_reportaudit"
        ordering = ["-id"]
        verbose_name = "report audit record"
        indexes = [models.Index(fields=["report", "-at"], name="litejobs_reportaudit_recent")]
        constraints = [
            # A run ends once: whichever of its job's attempts settles it writes its end row.
            models.UniqueConstraint(
                fields=["run"],
                condition=Q(outcome__in=REPORT_ENDINGS),
                name="litejobs_reportaudit_one_ending",
            )
        ]
        triggers = append_only("litejobs_reportaudit", "report audit records")

    def __str__(self) -> str:
        return f"{self.report} read by {self.user_name or '-'} at {self.at:%Y-%m-%d %H:%M:%S}"
