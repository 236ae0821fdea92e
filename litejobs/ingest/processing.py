"""Running a batch of records through a pipeline: its steps in order, then its sink.

Each record is one command. A batch first runs whole inside one savepoint; if any record
raises, that savepoint is rolled back and every record runs again in a savepoint of its own,
so a failing record is retried alone and never undoes the others. A record whose steps (or
sink) keep raising is dropped as the set's ``poison`` member after ``poison_after`` attempts
(the first run counts). A drop step answering anything but None or one of its reasons, an
enrich step reading a source it does not declare or answering something other than a record,
or a key that cannot be made, is an error on that record: it is counted as errored, never
dropped silently. Dropped and errored records are set aside with their payload, and every
outcome is counted per hour, in the caller's transaction (the batch's).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connections, transaction

from ..conf import settings
from ..core import clock
from ..core.enums import IngestOutcome
from ..core.payloads import dumps
from ..sql.cursors import hot_cursor, run_query
from .declarations import Declaration, DropStep, EnrichStep, Sources
from .errors import ReasonOutsideSet, SourceUndeclared
from .values import text_flaw

__all__ = ["KEY_MAX", "Item", "KeyRefused", "Outcome", "Tally", "key_of", "process"]

#: The longest key a record may have (the buffer's and the set-aside records' column).
KEY_MAX = 500

#: Errors on a record that another attempt would only repeat: it is errored at once.
DETERMINISTIC = (ReasonOutsideSet, SourceUndeclared)


#: Values no step can change in place: a record of only these is copied for each attempt.
_IMMUTABLE = frozenset({str, int, float, bool, type(None)})


class KeyRefused(Exception):
    """No key can be made of a record; the message says why, never with its values."""


def key_of(declaration: Declaration, record: Mapping[str, Any]) -> str:
    """The record's key as the buffer and the set-aside records keep it, or ``KeyRefused``."""
    try:
        key = declaration.key(record)
    except Exception as error:
        raise KeyRefused(f"its key= raised {type(error).__name__}") from error
    if key is None or isinstance(key, bool) or not isinstance(key, str | int) or key == "":
        raise KeyRefused("its key= answered no text or number")
    text = str(key)
    if len(text) > KEY_MAX:
        raise KeyRefused(f"its key is longer than {KEY_MAX} characters")
    found = text_flaw(text)
    if found is not None:
        raise KeyRefused(f"its key holds {found.value}")
    return text


@dataclass(frozen=True)
class Item:
    """One record to process: its key, and the record as JSON text (``payload``) or, when a
    copy of its top level copies all of it (a CSV row's texts), as the dict itself
    (``record``: no JSON is made for it unless it is set aside). Each attempt gets its own copy
    (parsed afresh, or copied), so a step that changed the record in a failed attempt changes
    nothing."""

    key: str
    payload: str = ""
    #: Why the record is errored before any step runs (its key could not be made), if it is.
    error: str = ""
    record: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, key: str, record: Mapping[str, Any], error: str = "") -> Item:
        """An item for a record in hand (a file's row): kept as it is when its values are
        all immutable, else as JSON text."""
        if _IMMUTABLE.issuperset(map(type, record.values())):
            return cls(key, error=error, record=record)
        return cls(key, dumps(record), error=error)

    def fresh(self) -> Any:
        """A copy of the record for one attempt."""
        return json.loads(self.payload) if self.record is None else dict(self.record)

    @property
    def text(self) -> str:
        """The record as JSON text, as it is set aside."""
        return self.payload if self.record is None else dumps(self.record)


@dataclass(frozen=True)
class Outcome:
    """What became of one record."""

    outcome: IngestOutcome
    reason: str = ""
    step: str = ""
    error: str = ""
    attempts: int = 1


@dataclass
class Tally:
    """A batch's outcomes, counted."""

    accepted: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    errored: int = 0

    def add(self, outcome: Outcome) -> None:
        if outcome.outcome is IngestOutcome.ACCEPTED:
            self.accepted += 1
        elif outcome.outcome is IngestOutcome.DROPPED:
            self.dropped[outcome.reason] += 1
        else:
            self.errored += 1


#: Most records' outcome, made once.
_ACCEPTED = Outcome(IngestOutcome.ACCEPTED)


class _Failed(Exception):
    """A record's attempt raised: where, and what."""

    def __init__(self, step: str, error: BaseException) -> None:
        super().__init__(step)
        self.step = step
        self.error = error


def process(declaration: Declaration, items: Sequence[Item]) -> Tally:
    """Run ``items`` through the pipeline inside the current transaction, set aside the
    dropped and errored ones and count every outcome; answer the counts."""
    alias = settings.DATABASE
    outcomes = _optimistic(declaration, items, alias)
    if isinstance(outcomes, tuple):
        failed_at, first_failure = outcomes
        outcomes = _careful(declaration, items, alias, failed_at, first_failure)
    _record(declaration, items, outcomes, alias)
    tally = Tally()
    for outcome in outcomes:
        tally.add(outcome)
    return tally


def _optimistic(
    declaration: Declaration, items: Sequence[Item], alias: str
) -> list[Outcome] | tuple[int, _Failed]:
    """Every record in one savepoint; on the first failure, the savepoint is rolled back and
    the failure answered with its position."""
    outcomes: list[Outcome] = []
    try:
        with transaction.atomic(using=alias):
            for position, item in enumerate(items):
                try:
                    outcomes.append(_attempt(declaration, item, 1))
                except _Failed as failed:
                    raise _Rollback(position, failed) from failed.error
    except _Rollback as rollback:
        return rollback.position, rollback.failed
    return outcomes


class _Rollback(Exception):
    def __init__(self, position: int, failed: _Failed) -> None:
        super().__init__(position)
        self.position = position
        self.failed = failed


def _careful(
    declaration: Declaration,
    items: Sequence[Item],
    alias: str,
    failed_at: int,
    first_failure: _Failed,
) -> list[Outcome]:
    """Every record in a savepoint of its own; the record that failed the whole-batch run
    has used its first attempt."""
    outcomes = []
    for position, item in enumerate(items):
        if position == failed_at:
            outcomes.append(_retried(declaration, item, alias, first_failure))
        else:
            outcomes.append(_retried(declaration, item, alias, None))
    return outcomes


def _retried(declaration: Declaration, item: Item, alias: str, failure: _Failed | None) -> Outcome:
    attempt = 0 if failure is None else 1
    while failure is None or not _final(failure, attempt, declaration):
        attempt += 1
        try:
            with transaction.atomic(using=alias):
                return _attempt(declaration, item, attempt)
        except _Failed as failed:
            failure = failed
    return _given_up(declaration, failure, attempt)


def _final(failure: _Failed, attempts: int, declaration: Declaration) -> bool:
    return isinstance(failure.error, DETERMINISTIC) or attempts >= declaration.poison_after


def _given_up(declaration: Declaration, failure: _Failed, attempts: int) -> Outcome:
    if isinstance(failure.error, DETERMINISTIC):
        return Outcome(
            IngestOutcome.ERRORED, step=failure.step, error=str(failure.error), attempts=attempts
        )
    return Outcome(
        IngestOutcome.DROPPED,
        reason=str(getattr(declaration.poison, "value", "poison")),
        step=failure.step,
        # The exception's type only: its message may quote the record's values.
        error=f"{type(failure.error).__name__} raised {attempts} times",
        attempts=attempts,
    )


def _attempt(declaration: Declaration, item: Item, attempt: int) -> Outcome:
    """One run of one record: its steps in order, then the sink. Raises ``_Failed``."""
    if item.error:
        return Outcome(IngestOutcome.ERRORED, step="key", error=item.error, attempts=attempt)
    record: Any = item.fresh()
    for step in declaration.steps:
        try:
            record = _run_step(declaration, step, record)
        except ReasonOutsideSet as error:
            return Outcome(
                IngestOutcome.ERRORED, step=step.name, error=str(error), attempts=attempt
            )
        except Exception as error:
            raise _Failed(step.name, error) from error
        if isinstance(record, _Dropped):
            return Outcome(
                IngestOutcome.DROPPED, reason=record.reason, step=step.name, attempts=attempt
            )
    try:
        declaration.sink(record)
    except Exception as error:
        raise _Failed("sink", error) from error
    return _ACCEPTED if attempt == 1 else Outcome(IngestOutcome.ACCEPTED, attempts=attempt)


@dataclass(frozen=True)
class _Dropped:
    reason: str


def _run_step(declaration: Declaration, step: DropStep | EnrichStep, record: Any) -> Any:
    if isinstance(step, DropStep):
        answer = step.func(record)
        if answer is None:
            return record
        if answer in step.reasons:
            return _Dropped(str(answer.value))
        raise ReasonOutsideSet(
            f"Drop step {step.name} answered a {type(answer).__name__}, which is not None nor "
            f"one of its reasons ({', '.join(sorted(str(r.value) for r in step.reasons))})."
        )
    enriched = step.func(record, Sources(step, declaration.sources))
    if not isinstance(enriched, Mapping):
        raise ReasonOutsideSet(
            f"Enrich step {step.name} answered a {type(enriched).__name__}; an enrich step "
            "answers the record (a dict).",
            code="ingest-record-invalid",
        )
    return enriched


def _record(
    declaration: Declaration, items: Sequence[Item], outcomes: Sequence[Outcome], alias: str
) -> None:
    """Set aside the dropped and errored records and count every outcome, in two statements
    (one when nothing was set aside)."""
    now = clock.now()
    aside = [
        (item, outcome)
        for item, outcome in zip(items, outcomes, strict=True)
        if outcome.outcome is not IngestOutcome.ACCEPTED
    ]
    counts = Counter((o.outcome.value, o.reason) for o in outcomes)
    with hot_cursor(connections[alias]) as cursor:
        if aside:
            run_query(cursor, "ingest_set_aside", _aside_params(declaration.name, aside, now))
        if counts:
            run_query(cursor, "ingest_count", count_params(declaration.name, counts, now))


def _aside_params(pipeline: str, aside: list[tuple[Item, Outcome]], now: Any) -> dict[str, Any]:
    return {
        "pipeline": pipeline,
        "now": now,
        "keys": [item.key for item, _ in aside],
        "outcomes": [outcome.outcome.value for _, outcome in aside],
        "reasons": [outcome.reason for _, outcome in aside],
        "steps": [outcome.step for _, outcome in aside],
        "errors": [outcome.error for _, outcome in aside],
        "attempts": [outcome.attempts for _, outcome in aside],
        "payloads": [item.text for item, _ in aside],
    }


def count_params(pipeline: str, counts: Mapping[tuple[str, str], int], now: Any) -> dict[str, Any]:
    """The parameters of ``ingest_count`` for counts by (outcome, reason)."""
    ordered = sorted(counts.items())  # one order for every writer: no deadlock between them
    return {
        "pipeline": pipeline,
        "now": now,
        "outcomes": [outcome for (outcome, _), _ in ordered],
        "reasons": [reason for (_, reason), _ in ordered],
        "counts": [count for _, count in ordered],
    }
