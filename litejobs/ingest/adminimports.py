"""Ingest's file imports in the admin: each import's progress and error report (where and
why a row was refused, by code, never its value), and the form that starts one (the add
permission on file imports), through ``litejobs.ingest.operations.start_import``."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import F, QuerySet, Window
from django.db.models.functions import RowNumber
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from ..admin.base import ReadOnlyAdmin, RecordInline, acted_by, admin_page, form_refused
from ..admin.jobs import CappedCountPaginator
from ..admin.reasons import ReasonForm
from ..exceptions import LitejobsError
from ..models import ImportRefusal, ImportRun
from . import operations
from .adminrecords import PipelineFilter
from .declarations import pipelines
from .files import NAME_MAX

IMPORT_TEMPLATE = "admin/litejobs/ingest/import_form.html"


class RefusalInline(RecordInline):
    """An import's refused rows, the first ``operations.REPORT_ROWS`` by offset: where and why
    (a code), never the value."""

    model = ImportRefusal
    verbose_name = "refused row"
    verbose_name_plural = f"error report: refused rows (the first {operations.REPORT_ROWS})"
    empty_text = "No refused rows."
    parent_view_permission = "litejobs.view_importrun"
    fields = ("line", "offset", "field", "code")
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        """The first rows of each run, by offset (a run may refuse millions)."""
        first = Window(RowNumber(), partition_by=[F("run")], order_by=[F("offset"), F("id")])
        rows: QuerySet[Any] = super().get_queryset(request)
        first_rows: QuerySet[Any] = (
            rows.annotate(position=first)
            .filter(position__lte=operations.REPORT_ROWS)
            .order_by("offset", "id")
        )
        return first_rows


class ImportForm(ReasonForm):
    """A file import as an operator starts it: one of the files a pipeline declares, and why.
    Only pipelines that declare their files and columns are offered, each with where its
    files are."""

    pipeline = forms.ChoiceField(
        help_text="The pipeline whose steps the file's records go through, and where its "
        "files are (storage: folder)."
    )
    file = forms.CharField(
        max_length=NAME_MAX,
        help_text="The file's name in the pipeline's storage, under its folder, such as "
        "feeds/catalog/2026-06.csv.",
    )
    format = forms.ChoiceField(
        choices=[
            ("csv", "CSV (a header row naming the declared columns)"),
            ("ndjson", "NDJSON (one JSON object per line)"),
        ]
    )

    field_order = ("pipeline", "file", "format", "reason")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["pipeline"]).choices = [
            (d.name, f"{d.name} ({d.files})")
            for d in pipelines.all()
            if d.files is not None and d.columns
        ]


@admin.register(ImportRun)
class ImportRunAdmin(ReadOnlyAdmin):
    """File imports with their progress and error report; started here by users with the
    add permission on file imports."""

    #: What the run reads, and what became of its rows.
    run = ("pipeline", "file", "format", "state", "progress_shown")
    counts = ("accepted", "dropped", "errored", "refused")
    list_display = ("id", *run, *counts, "created_at", "finished_at")
    list_filter = (PipelineFilter, "state")
    paginator = CappedCountPaginator
    show_full_result_count = False
    list_per_page = 50
    actions = None
    inlines = (RefusalInline,)
    fields = (
        "id",
        *run,
        "line",
        *counts,
        "refusals_by_code",
        "error",
        "created_at",
        "finished_at",
    )
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Starting an import needs the add permission on file imports."""
        return request.user.has_perm("litejobs.add_importrun")

    @admin.display(description="progress")
    def progress_shown(self, obj: ImportRun) -> str:
        """Bytes read of the file's size, as a percentage."""
        done = operations.progress(obj)
        size = f"{obj.offset} / {obj.size} bytes" if obj.size else f"{obj.offset} bytes"
        return size if done is None else f"{done:.0f}% ({size})"

    @admin.display(description="refused rows per code")
    def refusals_by_code(self, obj: ImportRun) -> str:
        """How many rows each refusal code covers."""
        report = operations.refusal_report(obj, limit=0)
        return ", ".join(f"{code}: {n}" for code, n in report["by_code"].items()) or "-"

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """The import form (GET, ``?pipeline=`` preselects one) and its start (POST)."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        if request.method == "POST":
            form = ImportForm(request.POST)
            run = self._start(request, form) if form.is_valid() else None
            if run is not None:
                change = reverse(f"{self.admin_site.name}:litejobs_importrun_change", args=[run.pk])
                return HttpResponseRedirect(change)
        else:
            form = ImportForm(initial={"pipeline": request.GET.get("pipeline", "")})
        context = {"form": form, **(extra_context or {})}
        return admin_page(self, request, IMPORT_TEMPLATE, "Import a file", context)

    def _start(self, request: HttpRequest, form: ImportForm) -> ImportRun | None:
        data = form.cleaned_data
        try:
            run = operations.start_import(
                data["pipeline"],
                data["file"],
                format=data["format"],
                by=acted_by(request),
                reason=data["reason"],
                user_id=request.user.pk,
            )
        except LitejobsError as error:
            form_refused(form, error)
            return None
        self.message_user(
            request,
            f"Import {run.pk} of {run.file!r} through {run.pipeline!r} is started: a worker of "
            "the ingest queue reads it; this page shows its progress and error report.",
            messages.SUCCESS,
        )
        return run
