"""The buffer: ``feed()`` writes records into a pipeline's buffer inside the caller's
transaction, applies the declared overflow past its capacity, and wakes the drain; and
``replay()`` feeds set-aside records of one reason back after a fix.

Past capacity nothing is lost silently: ``block`` waits (bounded) for room and then refuses
the whole feed (``ingest-buffer-full``, nothing written); ``drop_oldest`` drops the oldest
buffered records with the declared reason (set aside, counted, an overflow event);
``page`` keeps everything and pages an operator (an ERROR log line, an overflow event the
admin shows as an alert, the overflow metric).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.db import connections, transaction

from ..conf import settings
from ..core import clock
from ..core.enums import IngestOutcome, Overflow
from ..core.payloads import dumps
from ..exceptions import InvalidInput
from ..sql.cursors import Cursor, fetch_one, hot_cursor, run_query
from .declarations import Declaration
from .draining import wake
from .errors import BufferFull
from .processing import Item, KeyRefused, count_params, key_of
from .values import flaw

__all__ = ["feed", "prepare", "replay"]

logger = logging.getLogger(__name__)

#: How often a blocked feed looks for room.
BLOCK_POLL = 0.05
#: Set-aside records fed back per statement by a replay.
REPLAY_BATCH = 10_000


def prepare(declaration: Declaration, records: Iterable[Mapping[str, Any]]) -> list[Item]:
    """Each record's key and JSON text; ``InvalidInput`` (``ingest-record-invalid``) names
    the first record refused, by position, before anything is written."""
    if isinstance(records, Mapping | str | bytes) or not isinstance(records, Iterable):
        raise InvalidInput(
            f"Pipeline {declaration.name!r}: feed() takes a list of records (dicts); got "
            f"{'one record' if isinstance(records, Mapping) else _kind(records)}. Nothing "
            "was written.",
            code="ingest-record-invalid",
        )
    return [_item(declaration, position, record) for position, record in enumerate(records)]


def _kind(value: Any) -> str:
    return "None" if value is None else f"a value of type {type(value).__name__}"


def _item(declaration: Declaration, position: int, record: Any) -> Item:
    if not isinstance(record, Mapping):
        raise _refused(declaration, position, f"{_kind(record)} is not a record (a dict)")
    try:
        key = key_of(declaration, record)
        payload = dumps(dict(record))
    except KeyRefused as refused:
        raise _refused(declaration, position, str(refused)) from refused
    except (TypeError, ValueError) as error:
        raise _refused(
            declaration, position, f"a value is not JSON ({type(error).__name__})"
        ) from error
    found = flaw(record, payload)
    if found is not None:
        field, why = found
        raise _refused(declaration, position, f"its field {field!r} holds {why.value}")
    size = len(payload) if payload.isascii() else len(payload.encode())
    if size > declaration.max_record_bytes:
        raise _refused(
            declaration,
            position,
            f"it is {size} bytes of JSON, over the pipeline's max_record_bytes "
            f"({declaration.max_record_bytes})",
        )
    return Item(key, payload)


def _refused(declaration: Declaration, position: int, why: str) -> InvalidInput:
    return InvalidInput(
        f"Pipeline {declaration.name!r}: record {position} was refused: {why}. Records are "
        "dicts of JSON values; nothing of this feed was written.",
        code="ingest-record-invalid",
    )


def feed(declaration: Declaration, records: Iterable[Mapping[str, Any]]) -> int:
    """Buffer ``records`` in the caller's transaction (or one of their own) and wake the
    drain; answer how many were buffered."""
    items = prepare(declaration, records)
    if not items:
        return 0
    alias = settings.DATABASE
    with transaction.atomic(using=alias), hot_cursor(connections[alias]) as cursor:
        run_query(cursor, "ingest_feeding", {"pipeline": declaration.name})
        buffered = _make_room(cursor, declaration, len(items))
        now = clock.now()
        run_query(
            cursor,
            "ingest_feed",
            {
                "pipeline": declaration.name,
                "now": now,
                "keys": [item.key for item in items],
                "payloads": [item.payload for item in items],
            },
        )
        if buffered + len(items) > declaration.buffer.capacity:
            _overflow(cursor, declaration, buffered, len(items), now)
        wake(declaration.name)
    return len(items)


def _buffered(cursor: Cursor, declaration: Declaration, bound: int) -> int:
    run_query(cursor, "ingest_buffered", {"pipeline": declaration.name, "bound": bound})
    row = fetch_one(cursor)
    return int(row["buffered"]) if row else 0


def _make_room(cursor: Cursor, declaration: Declaration, count: int) -> int:
    """How many records are buffered; with ``block``, once there is room for ``count`` more
    (waiting up to the buffer's ``wait``), else ``BufferFull``."""
    capacity = declaration.buffer.capacity
    buffered = _buffered(cursor, declaration, capacity + count)
    if declaration.buffer.overflow is not Overflow.BLOCK or buffered + count <= capacity:
        return buffered
    if count > capacity:
        raise _full(declaration, buffered, count, "more records than the buffer holds at all")
    deadline = time.monotonic() + declaration.buffer.wait.total_seconds()
    while buffered + count > capacity:
        if time.monotonic() >= deadline:
            raise _full(declaration, buffered, count, "no room came in time")
        time.sleep(BLOCK_POLL)
        buffered = _buffered(cursor, declaration, capacity + count)
    return buffered


def _full(declaration: Declaration, buffered: int, count: int, why: str) -> BufferFull:
    buffer = declaration.buffer
    logger.error(
        "Pipeline %s: buffer full (%d of %d buffered), a feed of %d records was refused: %s.",
        declaration.name,
        buffered,
        buffer.capacity,
        count,
        why,
    )
    return BufferFull(
        f"Pipeline {declaration.name!r}: its buffer holds {buffered} of {buffer.capacity} "
        f"records and this feed of {count} was refused ({why}); nothing of it was written. "
        "Feed again later, run more workers for the ingest queue, or raise Buffer(capacity=)."
    )


def _overflow(
    cursor: Cursor, declaration: Declaration, buffered: int, count: int, now: datetime
) -> None:
    """Apply ``drop_oldest`` or ``page`` to a feed that went past capacity, and record it."""
    buffer = declaration.buffer
    dropped = 0
    if buffer.overflow is Overflow.DROP_OLDEST:
        reason = str(getattr(buffer.reason, "value", ""))  # drop_oldest declares one
        excess = buffered + count - buffer.capacity
        run_query(
            cursor,
            "ingest_drop_oldest",
            {"pipeline": declaration.name, "count": excess, "reason": reason, "now": now},
        )
        dropped = cursor.rowcount
        if dropped:
            counts = {(IngestOutcome.DROPPED.value, reason): dropped}
            run_query(cursor, "ingest_count", count_params(declaration.name, counts, now))
        logger.warning(
            "Pipeline %s: buffer over capacity (%d); dropped the %d oldest records as %r.",
            declaration.name,
            buffer.capacity,
            dropped,
            reason,
        )
    else:
        logger.error(
            "Pipeline %s: buffer over capacity: %d records buffered, capacity %d. Paging an "
            "operator: run more workers for the ingest queue or find why the drain is slow.",
            declaration.name,
            buffered + count,
            buffer.capacity,
        )
    event = {
        "pipeline": declaration.name,
        "overflow": str(buffer.overflow),
        "now": now,
        "capacity": buffer.capacity,
        "buffered": buffered,
        "fed": count,
        "dropped": dropped,
    }
    run_query(cursor, "ingest_overflow_event", event)


def replay(declaration: Declaration, reason: Any) -> int:
    """Feed the set-aside records of one drop ``reason`` (a member, its value or name) — or
    ``"errored"`` for the errored ones — back into the buffer, oldest first, and wake the
    drain; answer how many. Each is fed once: it is marked replayed in the same transaction."""
    if reason == IngestOutcome.ERRORED:
        outcome, value = IngestOutcome.ERRORED, ""
    else:
        outcome, value = IngestOutcome.DROPPED, str(declaration.reason(reason).value)
    alias = settings.DATABASE
    total = 0
    with transaction.atomic(using=alias), hot_cursor(connections[alias]) as cursor:
        run_query(cursor, "ingest_feeding", {"pipeline": declaration.name})
        while True:
            params = {
                "pipeline": declaration.name,
                "outcome": outcome.value,
                "reason": value,
                "limit": REPLAY_BATCH,
                "now": clock.now(),
            }
            run_query(cursor, "ingest_replay", params)
            replayed: int = cursor.rowcount
            total += replayed
            if replayed < REPLAY_BATCH:
                break
        if total:
            wake(declaration.name)
    return total
