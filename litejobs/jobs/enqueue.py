"""The one write path of a new job: an INSERT that joins the caller's transaction.

The job row is its own outbox: committing the caller's transaction is the enqueue, and the
row's insert trigger NOTIFYs idle workers at that commit. A live job holding the same key
turns the insert into a no-op and the answer into ``deduped=True``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from django.db import connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from ..conf import settings
from ..core.enums import JobState
from ..core.payloads import dumps
from ..core.tracing import enqueue_span
from ..sql.cursors import fetch_all, fetch_one, hot_cursor, migrated, pipelined, run_query
from .ratelimits import rated_columns

CHUNK = 1000
_RACE_RETRIES = 5


@dataclass(frozen=True)
class Enqueued:
    """What an enqueue answers: the job's id, and whether a live job already held the key."""

    id: int
    deduped: bool


@dataclass(frozen=True)
class PreparedRow:
    """One validated job row, ready to insert."""

    key: str
    tenant: str
    payload: str
    concurrency_key: str | None
    #: The rate bucket it starts in, when its declaration's rate has a key (else the
    #: declaration's or its queue's bucket, if it has a rate: ``rated_columns``).
    rate_key: str | None = None


class Enqueueable(Protocol):
    """What an insert needs of what it enqueues (a ``@job``, a Django Task, an occurrence's
    job): the columns every row of one statement shares."""

    name: str
    queue: str
    version: int

    @property
    def module(self) -> str:
        """The module that declares it (a worker that does not know its name imports it)."""

    @property
    def max_attempts(self) -> int: ...

    @property
    def concurrency_limit(self) -> int | None: ...

    def traceparent(self) -> str: ...


def common_columns(
    definition: Enqueueable, timing: tuple[datetime, datetime], priority: int
) -> dict[str, Any]:
    """The columns every job row of one statement shares, as its parameters."""
    now, run_at = timing
    return {
        "name": definition.name,
        "queue": definition.queue,
        "state": JobState.SCHEDULED if run_at > now else JobState.READY,
        "priority": priority,
        "run_at": run_at,
        "max_attempts": definition.max_attempts,
        "concurrency_limit": definition.concurrency_limit,
        "now": now,
        "traceparent": definition.traceparent(),
        "version": definition.version,
        "module": definition.module,
        # Its settle hook's call is written with its final state (litejobs.hooks).
        "settle_hook": getattr(definition, "on_settled", None) is not None,
        **rated_columns(definition),
    }


def insert_one(
    definition: Enqueueable,
    row: PreparedRow,
    timing: tuple[datetime, datetime],
    priority: int,
    *,
    occurrence_id: int | None = None,
    debounce: bool = False,
) -> Enqueued:
    """Insert one job, or answer the live job that holds its key.

    ``occurrence_id`` links the job to the scheduled occurrence it runs (the scheduler and a
    manual replay pass it); the occurrence then follows the job's state. ``debounce``: a live
    job of the key that has not started yet is moved to this one's ``run_at`` and arguments
    instead (``deduped=True``); a running one is answered as it is. With OpenTelemetry,
    inside a producer span whose context the row stores. Before ``migrate``,
    ``MigrationsUnapplied``.
    """
    with enqueue_span(definition.name, definition.queue), migrated(connections[settings.DATABASE]):
        return _insert_one(definition, row, timing, priority, occurrence_id, debounce)


def _insert_one(
    definition: Enqueueable,
    row: PreparedRow,
    timing: tuple[datetime, datetime],
    priority: int,
    occurrence_id: int | None,
    debounce: bool,
) -> Enqueued:
    params = {
        **common_columns(definition, timing, priority),
        "key": row.key,
        "tenant": row.tenant,
        "payload": row.payload,
        "concurrency_key": row.concurrency_key,
        "occurrence_id": occurrence_id,
    }
    params["rate_key"] = row.rate_key or params["rate_key"]
    with hot_cursor(connections[settings.DATABASE]) as cursor:
        for _ in range(_RACE_RETRIES):
            run_query(cursor, "enqueue_debounced" if debounce else "enqueue", params)
            inserted = fetch_one(cursor)
            if inserted:
                return Enqueued(inserted["id"], deduped=not inserted.get("added", True))
            run_query(
                cursor,
                "live_by_keys",
                {"name": definition.name, "keys": [row.key], "tenants": [row.tenant]},
            )
            live = fetch_one(cursor)
            if live:
                return Enqueued(live["id"], deduped=True)
            # The live holder finished between the two statements: the key is free again.
    raise RuntimeError(f"Could not enqueue {definition.name!r}: its key kept changing hands.")


def insert_many(
    definition: Enqueueable,
    rows: Iterable[PreparedRow],
    timing: tuple[datetime, datetime],
    priority: int,
    *,
    savepoint: bool = False,
) -> list[Enqueued]:
    """Insert many jobs of one declaration, 1,000 per statement, in one transaction.

    ``rows`` may be made as they are read: the statements go out in pipeline mode, so making
    the next 1,000 rows (``enqueue_many`` validates and encodes each input then) overlaps the
    server's insert of the previous 1,000. When making a later row can fail, pass
    ``savepoint=True``: the error then leaves nothing written and an open transaction of the
    caller's as it was. Without it, any error aborts the caller's transaction too. With
    OpenTelemetry, inside one producer span whose context every row stores.
    """
    with enqueue_span(definition.name, definition.queue), migrated(connections[settings.DATABASE]):
        return _insert_many(definition, rows, timing, priority, savepoint)


def _insert_many(
    definition: Enqueueable,
    rows: Iterable[PreparedRow],
    timing: tuple[datetime, datetime],
    priority: int,
    savepoint: bool,
) -> list[Enqueued]:
    common = common_columns(definition, timing, priority)
    made: list[PreparedRow] = []
    ids: dict[tuple[str, str], int] = {}
    inserted: set[int] = set()
    alias = settings.DATABASE
    connection = connections[alias]
    chunks = _chunks(rows, made)
    # The first chunk is made before the transaction is touched: an error making it (a bad
    # input) leaves the caller's transaction as it was, with or without a savepoint.
    first = next(chunks, None)
    if first is None:
        return []
    pending: Iterator[list[PreparedRow]] = itertools.chain([first], chunks)
    with transaction.atomic(using=alias, savepoint=savepoint):
        for _ in range(_RACE_RETRIES):
            for found in _insert_chunks(connection, common, pending):
                ids[(found["key"], found["tenant"])] = found["id"]
                inserted.add(found["id"])
            if len(inserted) == len(made):
                break  # every row inserted: no key was held (the usual case)
            missing = sorted({(r.key, r.tenant) for r in made} - ids.keys())
            if missing:
                with hot_cursor(connection) as cursor:
                    run_query(
                        cursor,
                        "live_by_keys",
                        {
                            "name": definition.name,
                            "keys": [key for key, _ in missing],
                            "tenants": [tenant for _, tenant in missing],
                        },
                    )
                    for found in fetch_all(cursor):
                        ids[(found["key"], found["tenant"])] = found["id"]
            # A live holder that finished between the two statements freed its key: insert again.
            left = [r for r in made if (r.key, r.tenant) not in ids]
            if not left:
                break
            pending = _chunks(left, [])
        else:
            raise RuntimeError(f"Could not enqueue {definition.name!r}: keys kept changing hands.")
    answers = []
    seen: set[int] = set()
    for row in made:
        job_id = ids[(row.key, row.tenant)]
        answers.append(Enqueued(job_id, deduped=job_id not in inserted or job_id in seen))
        seen.add(job_id)
    return answers


def _insert_chunks(
    connection: BaseDatabaseWrapper, common: dict[str, Any], chunks: Iterable[list[PreparedRow]]
) -> list[dict[str, Any]]:
    """Send ``enqueue_many`` once per chunk without waiting for the answers in between;
    answers the rows every statement inserted."""
    cursors = []
    with pipelined(connection):
        for chunk in chunks:
            cursor = hot_cursor(connection)
            run_query(
                cursor,
                "enqueue_many",
                {
                    **common,
                    "keys": dumps([r.key for r in chunk]),
                    "tenants": dumps([r.tenant for r in chunk]),
                    "payloads": f"[{','.join([r.payload for r in chunk])}]",
                    "concurrency_keys": dumps([r.concurrency_key for r in chunk]),
                    "rate_keys": dumps([r.rate_key or common["rate_key"] for r in chunk]),
                },
            )
            cursors.append(cursor)
    inserted = []
    for cursor in cursors:
        with cursor:
            inserted += fetch_all(cursor)
    return inserted


def _chunks(rows: Iterable[PreparedRow], made: list[PreparedRow]) -> Iterator[list[PreparedRow]]:
    """``rows`` 1,000 at a time, each row also appended to ``made`` as it is read."""
    chunk: list[PreparedRow] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == CHUNK:
            made += chunk
            yield chunk
            chunk = []
    if chunk:
        made += chunk
        yield chunk
