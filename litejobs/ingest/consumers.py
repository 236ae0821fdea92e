"""Consumers: a pipeline pulls a source that pages its records (a partner's changes API), one
batch at a time from the position it stored, and never takes a record twice nor loses one.

```python
@catalog.consumer("vendor-a")
def fetch_vendor_a(position):                # the position stored last time (None at first)
    page = partner.changes(since=position)
    return page.records, page.next_position  # no records: caught up

catalog.consume("vendor-a")                  # a worker runs it (schedule this to poll)
```

A batch's records are fed and the position past them stored in one transaction: a consumer
killed, or a transaction that fails, between the read and the commit leaves both as they
were, and the next run reads that batch again from the stored position, and only that batch.
The fetch runs outside any transaction (a partner's latency holds no lock nor connection
open); the position moves only from where the batch was read, so a batch read by a run that
another one overtook is rolled back and read again.

One run per consumer at a time fleet-wide: the job ``litejobs.ingest_consume`` (declared in
``jobs``) is limited to one run per (pipeline, key), on two lanes as the drain is
(``draining``): a run that spent its budget hands over to the other lane, and a
``consume()`` while one runs enqueues the other lane behind it, so a fetch starts after
every ``consume()``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, cast

from django.db import connections, transaction

from ..conf import settings
from ..core import clock
from ..core.payloads import round_trip
from ..core.registry import Registry
from ..exceptions import DeclarationError
from ..jobs import catalog
from ..jobs.context import JobContext
from ..jobs.declarations import JobDefinition
from ..jobs.enqueue import Enqueued
from ..sql.cursors import fetch_one, hot_cursor, run_query
from . import buffer
from .declarations import CONSUME_JOB, Declaration, pipelines
from .draining import LANES, running
from .errors import ConsumerNotFound, FetchRefused

__all__ = [
    "Consumer",
    "Position",
    "Turn",
    "advance",
    "consume",
    "declare",
    "enqueue_consume",
    "find",
    "label",
    "position",
    "request",
]

logger = logging.getLogger(__name__)

#: How long one consumer run fetches before it hands over to the other lane.
BUDGET = timedelta(minutes=2)
#: A consumer's key: it names the job, its concurrency and the stored position.
KEY = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
#: The longest "pipeline:key" a job key or concurrency key holds as it is; longer ones are
#: shortened and made unique by a digest.
LABEL_MAX = 180


@dataclass(frozen=True)
class Consumer:
    """A declared consumer (``@pipeline.consumer(key)``): still callable as its fetch
    (unit tests call it directly)."""

    pipeline: str
    key: str
    fetch: Callable[[Any], Any]
    module: str
    #: The globals of the module run that declared it (see ``declare``).
    namespace: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __call__(self, position: Any) -> Any:
        return self.fetch(position)

    def __repr__(self) -> str:
        return f"<Consumer {self.pipeline}:{self.key}>"


@dataclass(frozen=True)
class Position:
    """Where a consumer stands: the value its fetch takes, and how many times it moved (0:
    never)."""

    value: Any
    moves: int


@dataclass(frozen=True)
class Turn:
    """What one fetch came to: records fed, whether the position moved, whether the source is
    caught up, whether the batch was rolled back because another run moved the position."""

    records: int = 0
    moved: bool = False
    caught_up: bool = False
    overtaken: bool = False


def _name(pipeline: str, key: str) -> str:
    return f"{pipeline}:{key}"  # a key holds no colon: the last one splits them


def _duplicate(name: str, existing: Consumer, new: Consumer) -> DeclarationError:
    where = (
        f"in {new.module}"
        if existing.module == new.module
        else f"in {existing.module} and {new.module}"
    )
    return DeclarationError(
        f"Pipeline {new.pipeline!r} declares consumer {new.key!r} twice ({where}); give one "
        "another key.",
        code="pipeline-consumer-duplicate",
    )


def _missing(name: str) -> ConsumerNotFound:
    pipeline, _, key = name.rpartition(":")
    return ConsumerNotFound(
        f"Pipeline {pipeline!r} declares no consumer {key!r}: in the app's pipelines.py, mark "
        f"its fetch function with @….consumer({key!r}) of the pipeline({pipeline!r}, …)."
    )


#: The declared consumers, by "pipeline:key".
consumers: Registry[Consumer] = Registry("consumer", duplicate=_duplicate, missing=_missing)


def declare(declaration: Declaration, key: str) -> Callable[[Callable[..., Any]], Consumer]:
    """``@pipeline.consumer(key)``: check the key now and the fetch when it is marked. A key
    declared twice is refused, in two modules or twice in one run of a module (a module
    imported again after a failed import declares its consumers anew)."""
    namespace = sys._getframe(2).f_globals  # the module that called pipeline.consumer()
    if not isinstance(key, str) or not KEY.match(key):
        raise DeclarationError(
            f"Pipeline {declaration.name!r}: a consumer's key is 1-100 letters, digits or "
            f"'_.-', such as 'vendor-a'; got {key!r}.",
            code="pipeline-consumer-invalid",
        )

    def mark(fetch: Callable[..., Any]) -> Consumer:
        if not callable(fetch):
            raise DeclarationError(
                f"Pipeline {declaration.name!r}: @consumer({key!r}) marks a function "
                f"fetch(position) -> (records, next_position); got {fetch!r}.",
                code="pipeline-consumer-invalid",
            )
        module = str(getattr(fetch, "__module__", ""))
        declared = Consumer(declaration.name, key, fetch, module, namespace)
        name = _name(declaration.name, key)
        existing = consumers.get(name)
        if existing is not None and existing.namespace is namespace:
            raise _duplicate(name, existing, declared)
        return consumers.register(name, declared)

    return mark


def find(pipeline: str, key: str) -> Consumer:
    """The consumer ``key`` of ``pipeline``, or ``ConsumerNotFound``."""
    pipelines[pipeline]  # PipelineNotFound first: the pipeline itself may be unknown
    return consumers[_name(pipeline, key)]


def label(pipeline: str, key: str) -> str:
    """ "pipeline:key", shortened with a digest past ``LABEL_MAX`` (job keys are bounded)."""
    text = _name(pipeline, key)
    if len(text) <= LABEL_MAX:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return f"{text[: LABEL_MAX - 17]}~{digest}"


# Reading, fetching and moving ---------------------------------------------------------------


def position(consumer: Consumer) -> Position:
    """The consumer's stored position and moves (``Position(None, 0)`` before its first)."""
    params = {"pipeline": consumer.pipeline, "key": consumer.key}
    with hot_cursor(connections[settings.DATABASE]) as cursor:
        run_query(cursor, "ingest_position_read", params)
        row = fetch_one(cursor)
    if row is None:
        return Position(None, 0)
    stored = row["position"]
    return Position(json.loads(stored) if stored is not None else None, row["batches"])


def read_answer(consumer: Consumer, answer: Any, seen: Position) -> tuple[list[Any], str]:
    """The records and the next position (as JSON text) of a fetch's answer, or ``FetchRefused``
    naming what is wrong with it."""
    if not isinstance(answer, tuple) or len(answer) != 2:
        raise _refused(
            consumer,
            f"it answered {_kind(answer)}, not a tuple (records, next_position)",
            "ingest-fetch-answer-invalid",
        )
    records, following = answer
    if isinstance(records, Mapping | str | bytes) or not isinstance(records, Iterable):
        raise _refused(
            consumer,
            f"its records are {_kind(records)}, not a list of records (dicts)",
            "ingest-fetch-answer-invalid",
        )
    text = _json(consumer, following)
    listed = list(records)
    if listed and _same(following, seen.value):
        raise _refused(
            consumer,
            "it answered records with the position they were read from, so the next fetch "
            "would read them again; answer the position past them",
            "ingest-position-stuck",
        )
    return listed, text


def _kind(value: Any) -> str:
    if isinstance(value, tuple):
        return f"a tuple of {len(value)}"
    return f"a {type(value).__name__}"


def _json(consumer: Consumer, value: Any) -> str:
    """The position as JSON text, if it reads back as the same value (a tuple would come back a
    list, a dict's number keys as text)."""
    text = round_trip(value)
    if text is None:
        raise _refused(
            consumer,
            f"its next position, {_kind(value)}, is not a JSON value that reads back the same; "
            "answer text, a number, or a list or dict of them",
            "ingest-position-not-json",
        )
    return text


def _same(one: Any, other: Any) -> bool:
    """Equal as JSON (``1``, ``1.0`` and ``True`` differ; a dict's key order does not matter)."""
    try:
        return json.dumps(one, sort_keys=True) == json.dumps(other, sort_keys=True)
    except (TypeError, ValueError):
        return False


def _refused(consumer: Consumer, why: str, code: str) -> FetchRefused:
    return FetchRefused(
        f"Consumer {consumer.key!r} of pipeline {consumer.pipeline!r}: {why}. Nothing of this "
        "batch was written and the position did not move.",
        code=code,
    )


class _Overtaken(Exception):
    """Another run moved the position after this batch was read: roll the batch back."""


def advance(consumer: Consumer) -> Turn:
    """One turn: read the position, fetch from it, then feed the records and move the
    position past them in one transaction (nothing, when the source answered nothing new)."""
    declaration = pipelines[consumer.pipeline]
    seen = position(consumer)
    records, following = read_answer(consumer, consumer.fetch(seen.value), seen)
    if not records and _same(json.loads(following), seen.value):
        return Turn(caught_up=True)
    alias = settings.DATABASE
    try:
        with transaction.atomic(using=alias):
            fed = buffer.feed(declaration, records)
            _move(consumer, seen, following)
    except _Overtaken:
        logger.warning(
            "Consumer %s of pipeline %s: another run moved the position while this one fetched; "
            "its batch was rolled back and is read again from the stored position.",
            consumer.key,
            consumer.pipeline,
        )
        return Turn(overtaken=True)
    return Turn(records=fed, moved=True, caught_up=not records)


def _move(consumer: Consumer, seen: Position, following: str) -> None:
    params = {
        "pipeline": consumer.pipeline,
        "key": consumer.key,
        "position": following,
        "seen": seen.moves,
        "now": clock.now(),
    }
    with hot_cursor(connections[settings.DATABASE]) as cursor:
        run_query(cursor, "ingest_position_move", params)
        row = fetch_one(cursor)
    if row is None or row["batches"] != seen.moves + 1:
        raise _Overtaken


# The job -------------------------------------------------------------------------------------


@dataclass
class _Totals:
    batches: int = 0
    records: int = 0
    overtaken: int = 0

    def add(self, turn: Turn) -> None:
        self.batches += turn.moved
        self.records += turn.records
        self.overtaken += turn.overtaken


def consume(ctx: JobContext, pipeline: str, consumer: str, lane: str) -> dict[str, int]:
    """The consume job's body: fetch and feed the consumer's batches until its source is
    caught up (or the budget is spent: the other lane then carries on)."""
    declared = find(pipeline, consumer)
    totals = _Totals()
    started = time.monotonic()
    while not ctx.cancelled.is_set():
        turn = advance(declared)
        totals.add(turn)
        if turn.caught_up:
            break
        if time.monotonic() - started > BUDGET.total_seconds():
            _hand_over(declared, lane)
            break
    ctx.check_cancelled()
    return totals.__dict__


def _hand_over(consumer: Consumer, lane: str) -> None:
    """Enqueue the other lane to carry on after this run (it waits for this one to end)."""
    other = LANES[1 - LANES.index(lane)]
    with transaction.atomic(using=settings.DATABASE):
        enqueue_consume(consumer, other)
    logger.info(
        "Consumer %s of pipeline %s: handed over to lane %s after %s.",
        consumer.key,
        consumer.pipeline,
        other,
        BUDGET,
    )


def enqueue_consume(consumer: Consumer, lane: str) -> Enqueued:
    """Enqueue a lane's run of the consumer (the job is declared in ``litejobs.ingest.jobs``
    when litejobs' app is ready), in the caller's transaction."""
    definition = cast(JobDefinition, catalog.get(CONSUME_JOB))
    return definition.enqueue(pipeline=consumer.pipeline, consumer=consumer.key, lane=lane)


def request(consumer: Consumer) -> Enqueued:
    """Enqueue a run of the consumer in the caller's transaction: lane ``a``, or lane ``b``
    when ``a`` is running (a fetch then starts after this call, once ``a`` ends)."""
    enqueued = enqueue_consume(consumer, LANES[0])
    if enqueued.deduped and running(settings.DATABASE, enqueued.id):
        enqueued = enqueue_consume(consumer, LANES[1])
    return enqueued
