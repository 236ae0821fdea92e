"""The operator's side of ingest: what operators read about each declared pipeline, and what
they do.

The admin, ``manage.py litejobs pipelines|pipeline`` and the metrics read these summaries,
and the admin and the CLI replay and start imports through these verbs, so none of them
disagrees about a number or acts behind another's back. Every verb logs who asked.

Pipelines are declarations, not rows: a summary is built for each declared pipeline from a
few grouped reads of the buffer, the hourly counts and the overflow events (rows of a name
no longer declared are left out). Freshness: a ``bounded`` pipeline is *stale* when records
are buffered and the oldest of them was fed longer ago than the bound (it has waited past
what readers were promised); an empty buffer is never stale. An ``advisory`` pipeline has no
state: another system is the authority.
"""

from __future__ import annotations

import enum
import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count

from ..conf import settings
from ..core import clock
from ..core.clock import iso
from ..core.durations import format_duration
from ..core.enums import FreshnessKind, ImportState, IngestOutcome, OperatorVerb, Overflow
from ..jobs import actionlog
from ..jobs.actionlog import Actor
from ..jobs.operations import check_by
from ..models import (
    ImportRefusal,
    ImportRun,
    OverflowEvent,
    SetAsideRecord,
)
from . import imports, stats
from .buffer import replay as feed_back
from .declarations import Declaration, DropStep, EnrichStep, Files, pipelines

__all__ = [
    "ALERT_WINDOW",
    "Details",
    "ReplayOutcome",
    "Summary",
    "details",
    "drops_per_hour",
    "overflow_totals",
    "progress",
    "refusal_report",
    "replay",
    "replayable",
    "start_import",
    "summaries",
    "summary",
]

logger = logging.getLogger(__name__)

#: A ``page`` overflow this recent raises the admin's alert.
ALERT_WINDOW = timedelta(hours=1)
#: Recent imports and overflow events a pipeline's page and ``pipeline show`` list.
RECENT = 10
#: The refused rows an import's error report lists (the counts per code cover them all).
REPORT_ROWS = 100
#: No time at all (an age never shows below it, whatever the clocks).
ZERO = timedelta(0)
#: What ``replay`` takes instead of a drop reason: the errored records.
ERRORED = IngestOutcome.ERRORED.value


def _alias() -> str:
    return settings.DATABASE


@dataclass(frozen=True)
class Summary:
    """One declared pipeline at a glance: its buffer, its totals, its last overflow and
    whether its data is fresh."""

    declaration: Declaration
    buffered: int
    oldest_fed_at: datetime | None
    accepted: int
    dropped: dict[str, int]
    errored: int
    last_overflow: OverflowEvent | None
    last_page: OverflowEvent | None
    now: datetime

    @property
    def name(self) -> str:
        """The pipeline's name."""
        return self.declaration.name

    @property
    def capacity(self) -> int:
        """Records its buffer holds before its overflow applies."""
        return self.declaration.buffer.capacity

    @property
    def fill(self) -> str:
        """``buffered / capacity``."""
        return f"{self.buffered} / {self.capacity}"

    @property
    def over_capacity(self) -> bool:
        """More records are buffered than the capacity (a ``page`` buffer keeps them)."""
        return self.buffered > self.capacity

    @property
    def paged(self) -> bool:
        """A ``page`` overflow happened within ``ALERT_WINDOW``."""
        return self.last_page is not None and self.now - self.last_page.at <= ALERT_WINDOW

    @property
    def alert(self) -> bool:
        """Whether an operator must look now: paged within the hour, or over capacity."""
        return self.paged or self.over_capacity

    @property
    def oldest_age(self) -> timedelta | None:
        """How long the oldest buffered record has waited (None: the buffer is empty)."""
        return None if self.oldest_fed_at is None else max(self.now - self.oldest_fed_at, ZERO)

    @property
    def stale(self) -> bool:
        """A bounded pipeline whose oldest buffered record waited longer than the bound."""
        freshness = self.declaration.freshness
        if freshness is None or freshness.kind is not FreshnessKind.BOUNDED:
            return False
        age = self.oldest_age
        return age is not None and freshness.within is not None and age > freshness.within

    @property
    def freshness(self) -> str:
        """The declared freshness as operators read it, with ``STALE`` when it is broken."""
        declared = self.declaration.freshness
        if declared is None:
            return "not declared"
        return f"{declared} (STALE)" if self.stale else str(declared)

    @property
    def dropped_total(self) -> int:
        """Records dropped, every reason together."""
        return sum(self.dropped.values())

    def as_dict(self) -> dict[str, Any]:
        """The summary as JSON-ready data (``pipelines --json``)."""
        return {
            "pipeline": self.name,
            "freshness": self.freshness,
            "stale": self.stale,
            "buffered": self.buffered,
            "capacity": self.capacity,
            "overflow": str(self.declaration.buffer.overflow),
            "over_capacity": self.over_capacity,
            "oldest_buffered_at": iso(self.oldest_fed_at),
            "accepted": self.accepted,
            "dropped": dict(self.dropped),
            "errored": self.errored,
            "last_overflow": _event_dict(self.last_overflow),
            "alert": self.alert,
        }


def _event_dict(event: OverflowEvent | None) -> dict[str, Any] | None:
    if event is None:
        return None
    return {
        "at": iso(event.at),
        "overflow": event.overflow,
        "capacity": event.capacity,
        "buffered": event.buffered,
        "fed": event.fed,
        "dropped": event.dropped,
        "refused": event.refused,
    }


def summaries(names: Iterable[str] | None = None, now: datetime | None = None) -> list[Summary]:
    """A summary of every declared pipeline (or of the declared ones among ``names``), by
    name: three grouped reads, whatever the number of pipelines."""
    declared = pipelines.all() if names is None else [pipelines[name] for name in names]
    wanted = [d.name for d in declared]
    now = now or clock.now()
    buffers = stats.buffers(wanted)
    totals = stats.totals(wanted)
    events = _last_events(wanted)
    return [
        _summary(d, buffers.get(d.name), totals.get(d.name, {}), events.get(d.name, {}), now)
        for d in sorted(declared, key=lambda d: d.name)
    ]


def summary(name: str, now: datetime | None = None) -> Summary:
    """One declared pipeline's summary (``pipeline-unknown`` when none is named so)."""
    return summaries([name], now)[0]


def _summary(
    declaration: Declaration,
    buffer: dict[str, Any] | None,
    totals: dict[tuple[str, str], int],
    events: dict[str, OverflowEvent],
    now: datetime,
) -> Summary:
    dropped = {str(reason.value): 0 for reason in declaration.drop_reasons}
    for (outcome, reason), count in totals.items():
        if outcome == IngestOutcome.DROPPED and reason in dropped:
            dropped[reason] = count
    latest = max(events.values(), key=lambda e: e.at, default=None)
    return Summary(
        declaration=declaration,
        buffered=buffer["buffered"] if buffer else 0,
        oldest_fed_at=buffer["oldest"] if buffer else None,
        accepted=totals.get((IngestOutcome.ACCEPTED.value, ""), 0),
        dropped=dropped,
        errored=totals.get((IngestOutcome.ERRORED.value, ""), 0),
        last_overflow=latest,
        last_page=events.get(Overflow.PAGE.value),
        now=now,
    )


def _last_events(names: list[str]) -> dict[str, dict[str, OverflowEvent]]:
    """The latest overflow event of each pipeline and overflow kind."""
    rows = (
        OverflowEvent.objects.using(_alias())
        .filter(pipeline__in=names)
        .order_by("pipeline", "overflow", "-at", "-id")
        .distinct("pipeline", "overflow")
    )
    events: dict[str, dict[str, OverflowEvent]] = defaultdict(dict)
    for event in rows:
        events[event.pipeline][event.overflow] = event
    return events


def overflow_totals() -> dict[tuple[str, str], int]:
    """Overflow events per (declared pipeline, overflow kind), each kind of ``Overflow``."""
    names = [d.name for d in pipelines.all()]
    rows = (
        OverflowEvent.objects.using(_alias())
        .filter(pipeline__in=names, overflow__in=[o.value for o in Overflow])
        .order_by()
        .values_list("pipeline", "overflow")
        .annotate(n=Count("pk"))
    )
    return {(pipeline, overflow): n for pipeline, overflow, n in rows}


# One pipeline's page ---------------------------------------------------------------------


def steps(declaration: Declaration) -> list[dict[str, Any]]:
    """The declared steps in the order they run: kind, name, and the reasons a drop step
    may answer or the sources an enrich step reads."""
    shown = []
    for position, step in enumerate(declaration.steps, start=1):
        if isinstance(step, DropStep):
            names = sorted(str(reason.value) for reason in step.reasons)
        elif isinstance(step, EnrichStep):
            names = sorted(step.sources)
        else:  # a declaration checks every step is one of the two
            names = []
        shown.append({"position": position, "kind": step.kind, "name": step.name, "uses": names})
    return shown


def drops_per_hour(
    declaration: Declaration, hours: int, now: datetime | None = None
) -> list[tuple[datetime, dict[str, int]]]:
    """Dropped records per reason for each of the last ``hours`` hours (the current one
    last), every reason of the set present, 0 when it dropped nothing that hour."""
    end = (now or clock.now()).replace(minute=0, second=0, microsecond=0)
    start = end - timedelta(hours=hours - 1)
    counted = stats.hourly(declaration.name, start)
    reasons = [str(reason.value) for reason in declaration.drop_reasons]
    columns = []
    for step in range(hours):
        hour = start + timedelta(hours=step)
        counts = counted.get(hour, {})
        columns.append(
            (hour, {r: counts.get((IngestOutcome.DROPPED.value, r), 0) for r in reasons})
        )
    return columns


def replayable(name: str) -> dict[str, int]:
    """Set-aside records of pipeline ``name`` not replayed yet, by drop reason value (and
    ``"errored"``): what each ``replay`` would feed back."""
    rows = (
        SetAsideRecord.objects.using(_alias())
        .filter(pipeline=name, replayed_at__isnull=True)
        .order_by()
        .values_list("outcome", "reason")
        .annotate(n=Count("pk"))
    )
    return {(ERRORED if outcome == ERRORED else reason): n for outcome, reason, n in rows}


def progress(run: ImportRun) -> float | None:
    """How far an import has read its file, in percent (None while its size is unknown)."""
    if run.state == ImportState.DONE:
        return 100.0
    if not run.size:
        return None
    return min(100.0, 100.0 * run.offset / run.size)


def refusal_report(run: ImportRun, limit: int = REPORT_ROWS) -> dict[str, Any]:
    """An import's error report: refused rows per code, and the first ``limit`` of them
    (line, byte offset, field, code: where and why, never the value)."""
    refusals = ImportRefusal.objects.using(_alias()).filter(run=run)
    grouped = refusals.order_by("code").values("code").annotate(n=Count("pk"))
    by_code = {row["code"]: row["n"] for row in grouped}
    rows = list(refusals.order_by("offset", "id").values("line", "offset", "field", "code")[:limit])
    return {"total": sum(by_code.values()), "by_code": by_code, "rows": rows}


def _import_dict(run: ImportRun) -> dict[str, Any]:
    return {
        "id": run.pk,
        "file": run.file,
        "format": run.format,
        "state": run.state,
        "offset": run.offset,
        "size": run.size,
        "progress": progress(run),
        "accepted": run.accepted,
        "dropped": run.dropped,
        "errored": run.errored,
        "refused": run.refused,
        "error": run.error,
        "created_at": iso(run.created_at),
        "finished_at": iso(run.finished_at),
    }


@dataclass(frozen=True)
class Details:
    """A pipeline's page: its summary, its declaration, its recent imports and overflows."""

    summary: Summary
    steps: list[dict[str, Any]]
    replayable: dict[str, int] = field(default_factory=dict)
    imports: list[ImportRun] = field(default_factory=list)
    overflows: list[OverflowEvent] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (``pipeline show --json``)."""
        declaration = self.summary.declaration
        buffer = declaration.buffer
        return {
            **self.summary.as_dict(),
            "module": declaration.module,
            "steps": self.steps,
            "reasons": [str(reason.value) for reason in declaration.drop_reasons],
            "sources": sorted(declaration.sources),
            "columns": list(declaration.columns) if declaration.columns else None,
            "files": _files_dict(declaration.files),
            "sensitive": list(declaration.sensitive),
            "batch_size": declaration.batch_size,
            "poison_after": declaration.poison_after,
            "buffer": {
                "capacity": buffer.capacity,
                "overflow": str(buffer.overflow),
                "reason": _value(buffer.reason),
                "wait": format_duration(buffer.wait),
            },
            "replayable": dict(self.replayable),
            "imports": [_import_dict(run) for run in self.imports],
            "overflow_events": [_event_dict(event) for event in self.overflows],
        }


def _files_dict(files: Files | None) -> dict[str, str] | None:
    return None if files is None else {"storage": files.storage, "prefix": files.prefix}


def _value(reason: enum.Enum | None) -> str | None:
    return None if reason is None else str(reason.value)


def details(name: str, now: datetime | None = None) -> Details:
    """A declared pipeline's summary, steps, recent imports and overflow events."""
    found = summary(name, now)
    alias = _alias()
    return Details(
        summary=found,
        steps=steps(found.declaration),
        replayable=replayable(name),
        imports=list(ImportRun.objects.using(alias).filter(pipeline=name).order_by("-id")[:RECENT]),
        overflows=list(
            OverflowEvent.objects.using(alias).filter(pipeline=name).order_by("-at", "-id")[:RECENT]
        ),
    )


# Verbs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplayOutcome:
    """What a replay fed back."""

    pipeline: str
    reason: str
    replayed: int

    @property
    def message(self) -> str:
        """For the operator."""
        what = (
            "errored records" if self.reason == ERRORED else f"records dropped as {self.reason!r}"
        )
        if not self.replayed:
            return f"Pipeline {self.pipeline!r}: no {what} were waiting to be replayed."
        return (
            f"Pipeline {self.pipeline!r}: {self.replayed} {what} were fed back into its buffer; "
            "its drain takes them through the steps again."
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (``pipeline replay --json``)."""
        return {"pipeline": self.pipeline, "reason": self.reason, "replayed": self.replayed}


def replay(
    name: str, drop_reason: Any, *, by: str, reason: str, user_id: int | None = None
) -> ReplayOutcome:
    """Feed the set-aside records of one ``drop_reason`` (a value or name of the set) — or
    ``"errored"`` — of pipeline ``name`` back, after a fix (``Pipeline.replay``), and write
    the operator action log's row of it (who, and ``reason``: why) in the same transaction.
    Refused with ``pipeline-unknown``, ``ingest-reason-unknown`` or ``by-missing``."""
    declaration = pipelines[name]
    value = ERRORED if drop_reason == ERRORED else str(declaration.reason(drop_reason).value)
    actor = Actor(check_by(by), user_id, reason)
    with transaction.atomic(using=_alias()):
        replayed = feed_back(declaration, value)
        actionlog.record(
            OperatorVerb.INGEST_REPLAY,
            actor,
            affected=replayed,
            filter={"pipeline": name, "reason": value},
        )
    logger.info(
        "pipeline replay pipeline=%s reason=%s replayed=%d by=%s", name, value, replayed, actor.by
    )
    return ReplayOutcome(name, value, replayed)


def start_import(
    name: str, file: str, *, format: str, by: str, reason: str, user_id: int | None = None
) -> ImportRun:
    """Start importing ``file`` (one of the files the pipeline declares) through pipeline
    ``name`` (``Pipeline.import_file``), with the operator action log's row of it (who, and
    ``reason``: why) in the same transaction; a worker runs it. Answers its ``ImportRun``."""
    declaration = pipelines[name]
    actor = Actor(check_by(by), user_id, reason)
    with transaction.atomic(using=_alias()):
        run = imports.import_file(declaration, file, format=format)
        actionlog.record(
            OperatorVerb.IMPORT_START,
            actor,
            affected=1,
            filter={"pipeline": name, "file": run.file, "format": run.format, "import": run.pk},
        )
    logger.info(
        "pipeline import started pipeline=%s run=%s file=%s format=%s by=%s",
        name,
        run.pk,
        file,
        format,
        actor.by,
    )
    return run
