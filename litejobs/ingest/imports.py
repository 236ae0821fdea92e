"""File imports: ``import_file()`` records an ``ImportRun`` and enqueues its job; the job
streams the file from Django storage a page at a time.

The file is one of the pipeline's declared files (``files``): a regular file under its
declared folder, read up to the size it had when the import started. Each page
(``batch_size`` rows) is processed, its refused rows written to the run's error report, and
the run's byte offset moved past it, in one transaction: an import whose worker is killed
resumes at the last committed offset, with no record lost or written twice. A CSV header
that does not name exactly the declared columns refuses the import before any row is
written.
"""

from __future__ import annotations

import logging
from typing import Any, cast

from django.db import transaction

from ..conf import settings
from ..core import clock
from ..core.enums import ImportState
from ..jobs import catalog
from ..jobs.context import JobContext
from ..jobs.declarations import JobDefinition
from ..models import ImportRefusal, ImportRun
from .declarations import IMPORT_JOB, Declaration, pipelines
from .errors import ImportRefused
from .files import Bounded, open_file
from .processing import Item, KeyRefused, Tally, key_of, process
from .reader import Format, Page, SeekableBytes, read_header, read_page

__all__ = ["import_file", "run_import"]

logger = logging.getLogger(__name__)


def _format(value: Any) -> Format:
    try:
        return Format(value)
    except ValueError:
        raise ImportRefused(
            f"format={value!r} is not one litejobs reads; use 'csv' or 'ndjson'.",
            code="ingest-format-invalid",
        ) from None


def _columns(declaration: Declaration) -> tuple[str, ...]:
    if declaration.columns is None:
        raise ImportRefused(
            f"Pipeline {declaration.name!r} declares no columns=, so no file can be checked "
            "against them; declare the record's columns.",
            code="ingest-columns-missing",
        )
    return declaration.columns


def import_file(declaration: Declaration, name: str, *, format: str = "csv") -> ImportRun:
    """Check the file's header now and enqueue its import (in the caller's transaction);
    answer the ``ImportRun`` the admin and the CLI follow."""
    file_format = _format(format)
    columns = _columns(declaration)
    opened = open_file(declaration, name)
    with opened.file:
        read_header(
            Bounded(opened.file, opened.size),
            file_format,
            columns,
            max_record_bytes=declaration.max_record_bytes,
        )
    with transaction.atomic(using=settings.DATABASE):
        run = ImportRun.objects.using(settings.DATABASE).create(
            pipeline=declaration.name,
            file=name,
            format=file_format.value,
            size=opened.size,
            created_at=clock.now(),
        )
        cast(JobDefinition, catalog.get(IMPORT_JOB)).enqueue(run_id=run.pk)
    return run


def run_import(ctx: JobContext, run_id: int) -> dict[str, Any]:
    """The import job's body: import the run's file from its last committed offset up to the
    size it had at the start, a page per transaction."""
    run = ImportRun.objects.using(settings.DATABASE).get(pk=run_id)
    declaration: Declaration = pipelines[run.pipeline]
    try:
        opened = open_file(declaration, run.file)
    except ImportRefused as refusal:  # gone, or no longer one the pipeline may read
        with transaction.atomic(using=settings.DATABASE):
            locked = ImportRun.objects.using(settings.DATABASE).select_for_update().get(pk=run_id)
            if locked.state == ImportState.RUNNING:
                _refuse(locked, refusal)
        return {"state": locked.state, "accepted": locked.accepted, "refused": locked.refused}
    with opened.file:
        file = Bounded(opened.file, opened.size if run.size is None else run.size)
        while not ctx.cancelled.is_set():
            if not _next_page(declaration, run_id, file):
                break
    ctx.check_cancelled()
    run.refresh_from_db()
    return {"state": run.state, "accepted": run.accepted, "refused": run.refused}


def _next_page(declaration: Declaration, run_id: int, file: SeekableBytes) -> bool:
    """Import one page and move the offset past it, in one transaction; answer whether
    there is more to import."""
    with transaction.atomic(using=settings.DATABASE):
        run = ImportRun.objects.using(settings.DATABASE).select_for_update().get(pk=run_id)
        if run.state != ImportState.RUNNING:
            return False
        try:
            page = _read(declaration, run, file)
        except ImportRefused as refusal:
            _refuse(run, refusal)
            return False
        tally = process(declaration, _items(declaration, page))
        _advance(run, page, tally)
        return not page.done


def _read(declaration: Declaration, run: ImportRun, file: SeekableBytes) -> Page:
    columns = declaration.columns or ()  # import_file refuses a pipeline without columns
    layout = read_header(
        file, Format(run.format), columns, max_record_bytes=declaration.max_record_bytes
    )
    start, line = (layout.offset, layout.line) if run.offset == 0 else (run.offset, run.line)
    return read_page(file, layout, start=start, line=line, size=declaration.batch_size)


def _items(declaration: Declaration, page: Page) -> list[Item]:
    items = []
    for record in page.records:
        try:
            items.append(Item.of(key_of(declaration, record), record))
        except KeyRefused as refused:
            items.append(Item.of("", record, error=str(refused)))
    return items


def _refuse(run: ImportRun, refusal: ImportRefused) -> None:
    run.state = ImportState.REFUSED
    run.error = str(refusal)
    run.finished_at = clock.now()
    run.save(update_fields=["state", "error", "finished_at"])
    logger.warning("Import %s of %s refused: %s", run.pk, run.file, refusal)


def _advance(run: ImportRun, page: Page, tally: Tally) -> None:
    ImportRefusal.objects.using(settings.DATABASE).bulk_create(
        ImportRefusal(run=run, line=r.line, offset=r.offset, field=r.field or "", code=r.code)
        for r in page.refusals
    )
    run.offset, run.line = page.end, page.line
    run.accepted += tally.accepted
    run.dropped += sum(tally.dropped.values())
    run.errored += tally.errored
    run.refused += len(page.refusals)
    if page.done:
        run.state = ImportState.DONE
        run.finished_at = clock.now()
    run.save()
