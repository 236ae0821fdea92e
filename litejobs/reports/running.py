"""The worker's side of a report run: the output written a page at a time, each page its own
part, recorded with the key it ended at, so a run whose worker dies resumes at its next page.
Each page is read while the one before it is written (``reading.ReadAhead``).

Between pages the run looks at its bounds: past ``max_rows``, ``max_bytes`` or
``max_seconds`` (a page's query is also cancelled by the database when the time left runs
out) it is stopped with the limit's code, and a cancelled run stops; either way its parts are
removed and nothing is offered. Only a run that read all its rows within its bounds is
``done``, with its manifest written and its expiry set.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Any

import psycopg
from django.db import DatabaseError
from django.db.models import F

from ..conf import settings
from ..core import clock
from ..core.durations import format_duration
from ..core.enums import REPORT_LIVE, PagingMode, ReportState
from ..jobs.context import JobContext
from ..models import ReportLimits, ReportRun
from . import auditing, limits, output, params, storage
from .declarations import Declaration, reports
from .errors import ReportNotFound, ReportRefused, ReportStopped
from .reading import Pages, ReadAhead

__all__ = ["run_report"]

logger = logging.getLogger(__name__)


class _Ended(Exception):
    """The run moved under the worker: cancelled, or written on by another attempt (this
    one's lease lapsed). Stop writing; only an ended run's parts are removed."""


@dataclass
class _Run:
    """One run as the worker writes it."""

    record: ReportRun
    declaration: Declaration
    limits: ReportLimits
    pages: Pages

    @property
    def paged(self) -> bool:
        """Whether the run reads a page at a time (``Paging.pages``)."""
        paging = self.declaration.paging
        return paging is not None and paging.mode is PagingMode.PAGES

    def want(self, row_count: int) -> int:
        """How many rows the page after ``row_count`` rows reads: a page, or one row past
        ``max_rows`` (which stops the run)."""
        paging = self.declaration.paging
        size = paging.size if paging is not None and self.paged else self.limits.max_rows + 1
        return min(size, self.limits.max_rows - row_count + 1)

    def time_left(self) -> timedelta:
        started = self.record.started_at or clock.now()
        return self.limits.max_seconds - (clock.now() - started)


def _runs() -> Any:
    return ReportRun.objects.using(settings.DATABASE)


def run_report(ctx: JobContext, run_id: int) -> dict[str, Any]:
    """The run job's body: write the run's output from its next page to its end."""
    record = _runs().get(pk=run_id)
    if record.state not in REPORT_LIVE:
        _discard(record)
        return {"state": record.state}
    try:
        run = _prepare(record)
    except (ReportNotFound, ReportRefused) as refusal:
        _end(record, ReportState.FAILED, refusal)
        return {"state": record.state}
    try:
        _write(ctx, run)
    except _Ended:
        record.refresh_from_db()
        if record.state not in REPORT_LIVE:  # live: another attempt writes it now
            _discard(record)
    except ReportStopped as stop:
        _end(record, ReportState.STOPPED, stop)
    except ReportRefused as refusal:
        _end(record, ReportState.FAILED, refusal)
    except Exception as error:
        if ctx.final_attempt:
            _end(record, ReportState.FAILED, error)
        raise
    return {"state": record.state, "rows": record.row_count, "bytes": record.bytes}


def _prepare(record: ReportRun) -> _Run:
    declaration: Declaration = reports[record.report]
    row = limits.current(declaration)
    checked = params.restored(declaration, record.parameters)
    run = _Run(record, declaration, row, Pages(declaration, checked, record.tenant))
    started = (
        _runs()
        .filter(pk=record.pk, state__in=REPORT_LIVE)
        .update(
            state=ReportState.RUNNING,
            started_at=record.started_at or clock.now(),
        )
    )
    if not started:
        raise ReportRefused(f"Run #{record.pk} ended before it started.", code="report-ended")
    record.refresh_from_db()
    return run


def _write(ctx: JobContext, run: _Run) -> None:
    record = run.record
    files = storage.get(record.storage)
    if record.parts == 0:
        _estimate(run)
        _record(run, files, output.head(run.declaration), rows=[])
    reader = ReadAhead(partial(_read, run), run.pages.alias)
    try:
        while True:
            ctx.check_cancelled()
            if not _next_page(run, files, reader):
                break
    finally:
        reader.close()
    _finish(run, files)


def _estimate(run: _Run) -> None:
    with run.pages.session() as reader:
        estimate = run.pages.estimate(reader)
    run.record.estimated_rows = estimate
    _runs().filter(pk=run.record.pk).update(estimated_rows=estimate)


def _next_page(run: _Run, files: Any, reader: ReadAhead) -> bool:
    """Write the next page; answer whether more may follow."""
    record, bounds = run.record, run.limits
    if not run.paged and record.parts > 1:
        return False
    if run.time_left() <= timedelta(0):
        raise _stopped(run, "report-max-seconds")
    want = run.want(record.row_count)
    # A full page is followed by the next one, read while this one is written.
    following = run.want(record.row_count + want) if run.paged else 0
    rows = reader.page(record.last_key, want, following=following)
    if not rows:
        return False
    if record.row_count + len(rows) > bounds.max_rows:
        raise _stopped(run, "report-max-rows")
    _record(run, files, output.body(run.declaration, rows), rows=rows)
    return len(rows) == want


def _read(run: _Run, after: Any, limit: int) -> list[Any]:
    """One page in a transaction of its own, cancelled by the database past the time left."""
    left = run.time_left()
    if left <= timedelta(0):
        raise _stopped(run, "report-max-seconds")
    # The bytes left as this read starts: a page read ahead, while the page before is being
    # recorded, is cut no later than it must be, and recording it stops the run if it is over.
    room = run.limits.max_bytes - run.record.bytes
    try:
        with run.pages.session() as reader:
            return run.pages.read(reader, after=after, limit=limit, left=room, timeout=left)
    except (DatabaseError, psycopg.Error) as error:
        if _timed_out(error):
            raise _stopped(run, "report-max-seconds") from error
        raise


def _timed_out(error: BaseException) -> bool:
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, psycopg.errors.QueryCanceled):
            return True
        cause = cause.__cause__
    return False


def _stopped(run: _Run, code: str) -> ReportStopped:
    bounds = run.limits
    what = {
        "report-max-rows": f"it read more than {bounds.max_rows:,} rows (max_rows)",
        "report-max-bytes": f"its output grew past {bounds.max_bytes:,} bytes (max_bytes)",
        "report-max-seconds": f"it ran longer than {format_duration(bounds.max_seconds)} "
        "(max_seconds)",
    }[code]
    return ReportStopped(
        f"Run #{run.record.pk} of {run.record.report} was stopped: {what}. Narrow the "
        "parameters, or raise the limit in the report's limits.",
        code=code,
    )


def _record(run: _Run, files: Any, data: bytes, *, rows: list[Any]) -> None:
    """Write part ``parts`` and record it (fenced by the part count: a cancelled run, or one
    another attempt moved on, records nothing)."""
    record = run.record
    if record.bytes + len(data) > run.limits.max_bytes:
        raise _stopped(run, "report-max-bytes")
    name = storage.part_name(record.output_path, record.parts, output.extension(run.declaration))
    storage.write(files, name, data)
    row_count = record.row_count + len(rows)
    last_key = rows[-1][0] if rows else record.last_key
    progress = _progress(row_count, record.estimated_rows)
    recorded = (
        _runs()
        .filter(pk=record.pk, state=ReportState.RUNNING, parts=record.parts)
        .update(
            parts=F("parts") + 1,
            last_key=last_key,
            row_count=row_count,
            bytes=F("bytes") + len(data),
            progress=progress,
        )
    )
    if not recorded:
        raise _Ended
    record.parts += 1
    record.last_key, record.row_count, record.progress = last_key, row_count, progress
    record.bytes += len(data)


def _progress(rows: int, estimate: int | None) -> int | None:
    """Percent of the planner's estimate written; None (unknown) without an estimate, or once
    the run has written as many rows as it estimated (the estimate was too low: the planner's
    statistics are stale, or its guess at the query's selectivity is off)."""
    if not estimate or rows >= estimate:
        return None
    return rows * 100 // estimate


def _finish(run: _Run, files: Any) -> None:
    record = run.record
    extension = output.extension(run.declaration)
    names = [storage.part_name(record.output_path, n, extension) for n in range(record.parts)]
    summary = {
        "report": record.report,
        "run": record.pk,
        "format": extension,
        "encoding": run.declaration.encoding,
        "columns": list(run.declaration.columns),
        "rows": record.row_count,
        "bytes": record.bytes,
    }
    storage.write_manifest(files, record.output_path, names, summary)
    now = clock.now()
    done = (
        _runs()
        .filter(pk=record.pk, state=ReportState.RUNNING)
        .update(
            state=ReportState.DONE,
            progress=100,
            finished_at=now,
            expires_at=now + run.limits.lifetime,
        )
    )
    if not done:
        raise _Ended
    record.refresh_from_db()
    auditing.ended(record)


def _end(record: ReportRun, state: ReportState, error: BaseException) -> None:
    """End a live run as stopped or failed, saying why; its parts are removed."""
    code = getattr(error, "code", type(error).__name__)
    _runs().filter(pk=record.pk, state__in=REPORT_LIVE).update(
        state=state, stop_reason=code, error=str(error)[:2000], finished_at=clock.now()
    )
    record.refresh_from_db()
    logger.warning("Report run #%s of %s %s: %s", record.pk, record.report, record.state, error)
    _discard(record)


def _discard(record: ReportRun) -> None:
    """Remove an ended run's parts (nothing of it is offered) and write its ending audit row
    (once)."""
    if record.removed_at is None and record.state != ReportState.DONE:
        storage.remove(storage.get(record.storage), record.output_path)
        _runs().filter(pk=record.pk).update(removed_at=clock.now())
    auditing.ended(record)
