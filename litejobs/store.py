"""Fenced state transitions of claimed jobs, on any DB-API cursor (Django's or psycopg's).

Each function is one statement (``claim_limited``: two, in one transaction). Every write to a
claimed job names its fencing value and requires ``state = 'running'``: a write by a worker
that lost its claim changes nothing and is reported as refused.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from .core.clock import lease_instant
from .scheduling.identity import OccurrenceRef
from .sql import fetch_all, fetch_one, run_query

#: pg_advisory_xact_lock key serialising claims of concurrency-limited jobs.
LIMITED_CLAIM_LOCK = zlib.crc32(b"litejobs.claim_limited")


@dataclass
class ClaimedJob:
    """A job this worker holds under a lease, as the claim statement answered it."""

    id: int
    name: str
    queue: str
    key: str
    tenant: str
    payload: dict[str, Any]
    attempt: int
    max_attempts: int
    fence: int
    traceparent: str
    #: The payload's schema version (the declaration's ``version`` when it was enqueued).
    version: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ClaimedJob:
        """The job as the claim statements answer it (a row by column name)."""
        payload = row["payload"]
        if isinstance(payload, str):  # Django's adapters leave jsonb as text
            payload = json.loads(payload)
        job = cls(
            id=row["id"],
            name=row["name"],
            queue=row["queue"],
            key=row["key"],
            tenant=row["tenant"],
            payload=payload,
            attempt=row["attempts"],
            max_attempts=row["max_attempts"],
            fence=row["fence"],
            traceparent=row["traceparent"],
            version=row["version"],
        )
        if row["occurrence_id"] is not None:  # it runs a scheduled occurrence
            job.extra["occurrence"] = OccurrenceRef.from_key(row["occurrence_id"], job.key)
        return job


def _claim_params(owner, queues, limit, now, lease) -> dict[str, Any]:
    return {
        "owner": owner,
        "queues": list(queues) if queues else None,
        "limit": limit,
        "now": now,
        "lease": lease,
        "db_now": lease_instant(),
    }


@dataclass(frozen=True)
class Claim:
    """What one claim statement answered: the jobs now held, and whether limited ones wait."""

    jobs: list[ClaimedJob]
    limited_due: bool


def claim(cursor, *, owner, queues, limit, now, lease) -> Claim:
    """Claim up to ``limit`` due jobs without a concurrency limit (commits with the cursor).

    ``now`` decides which jobs are due; each lease runs ``lease`` from the database's clock.
    The answer also says whether concurrency-limited jobs are due, so the (locking) limited
    claim runs only when it has something to take, and every worker takes every kind of job.
    """
    run_query(cursor, "claim", _claim_params(owner, queues, limit, now, lease))
    answered = fetch_all(cursor)
    jobs = [ClaimedJob.from_row(found) for found in answered if found["id"] is not None]
    return Claim(jobs, limited_due=len(jobs) < len(answered))


def claim_limited(cursor, *, owner, queues, limit, now, lease) -> list[ClaimedJob]:
    """Claim due concurrency-limited jobs; call in a transaction (the lock holds until its end)."""
    run_query(cursor, "lock_limited_claims", {"lock_id": LIMITED_CLAIM_LOCK})
    run_query(cursor, "claim_limited", _claim_params(owner, queues, limit, now, lease))
    return [ClaimedJob.from_row(found) for found in fetch_all(cursor)]


def next_due(cursor, *, queues, now: datetime) -> datetime | None:
    """The earliest run_at after ``now`` of any claimable job in these queues."""
    run_query(cursor, "next_due", {"queues": list(queues) if queues else None, "now": now})
    return fetch_one(cursor)["due"]


def complete(cursor, job: ClaimedJob, *, now: datetime, result_json: str | None) -> bool:
    """Mark a held job done; False when the fence is stale (another claim owns it)."""
    run_query(
        cursor,
        "complete",
        {"id": job.id, "fence": job.fence, "now": now, "result": result_json},
    )
    return cursor.rowcount == 1


def complete_batch(cursor, acks: Sequence[tuple[ClaimedJob, datetime, str | None]]) -> set[int]:
    """Mark many held jobs done in one statement; answers the ids whose fence was current."""
    run_query(
        cursor,
        "complete_batch",
        {
            "ids": [job.id for job, _, _ in acks],
            "fences": [job.fence for job, _, _ in acks],
            "finished": [finished for _, finished, _ in acks],
            "results": [result for _, _, result in acks],
        },
    )
    return {found["id"] for found in fetch_all(cursor)}


def fail(
    cursor,
    job: ClaimedJob,
    *,
    owner: str,
    now: datetime,
    state: str,
    run_at: datetime | None,
    outcome: str,
    error_class: str,
    error_message: str,
    error_traceback: str,
) -> bool:
    """End a failed attempt (to ``failed``, ``dead`` or ``cancelled``) and record it; fenced."""
    terminal = state != "failed"
    run_query(
        cursor,
        "fail",
        {
            "id": job.id,
            "fence": job.fence,
            "owner": owner,
            "now": now,
            "state": state,
            "run_at": run_at,
            "finished_at": now if terminal else None,
            "outcome": outcome,
            "error_class": error_class,
            "error_message": error_message,
            "error_traceback": error_traceback,
        },
    )
    return fetch_one(cursor) is not None


def discard(cursor, job: ClaimedJob) -> bool:
    """Delete a spent job whose declaration keeps no dead letters; fenced."""
    run_query(cursor, "discard", {"id": job.id, "fence": job.fence})
    return fetch_one(cursor) is not None


def hand_back(
    cursor,
    job: ClaimedJob,
    *,
    now: datetime,
    grace: timedelta,
    error_class: str,
    error_message: str,
) -> bool:
    """Hand a job this code cannot run back uncounted, due after a backoff; fenced.

    False when the fence is stale or the grace since its first hand-back is spent.
    """
    run_query(
        cursor,
        "hand_back",
        {
            "id": job.id,
            "fence": job.fence,
            "now": now,
            "grace": grace,
            "error_class": error_class,
            "error_message": error_message,
        },
    )
    return fetch_one(cursor) is not None


def release(cursor, jobs: Sequence[ClaimedJob]) -> set[int]:
    """Hand held jobs back to ``ready`` with their attempt uncounted; answers the ids released."""
    if not jobs:
        return set()
    run_query(cursor, "release", {"ids": [j.id for j in jobs], "fences": [j.fence for j in jobs]})
    return {found["id"] for found in fetch_all(cursor)}


def save_progress(cursor, updates: Sequence[tuple[ClaimedJob, str]]) -> None:
    """Write the latest progress of held jobs (JSON text each); fenced."""
    run_query(
        cursor,
        "progress",
        {
            "ids": [job.id for job, _ in updates],
            "fences": [job.fence for job, _ in updates],
            "progress": [progress for _, progress in updates],
        },
    )


@dataclass(frozen=True)
class HeartbeatAnswer:
    """What a heartbeat learned: leases still ours, cancellations asked, jobs reaped."""

    renewed: set[int]
    cancel_requested: set[int]
    reaped: int


def heartbeat(cursor, *, worker: dict[str, Any], held: Sequence[ClaimedJob], reap: bool):
    """Renew the Worker row and every held lease, and reap leases that lapsed elsewhere.

    ``worker`` carries the row's columns, ``lease`` and ``forget_after`` (durations); every
    expiry is computed and compared on the database's clock (``lease_instant``).
    """
    run_query(
        cursor,
        "heartbeat",
        {
            **worker,
            "db_now": lease_instant(),
            "ids": [job.id for job in held],
            "fences": [job.fence for job in held],
            "in_flight": json.dumps([job.id for job in held][:1000]),
            "reap": reap,
        },
    )
    renewed, cancel, reaped = set(), set(), 0
    for found in fetch_all(cursor):
        if found["reaped"]:
            reaped += 1
            continue
        renewed.add(found["id"])
        if found["cancel_requested"]:
            cancel.add(found["id"])
    return HeartbeatAnswer(renewed, cancel, reaped)


def worker_stopped(cursor, owner: str) -> None:
    """Remove the Worker row of a worker that exits cleanly."""
    run_query(cursor, "worker_stopped", {"owner": owner})


def suspend(
    cursor, job: ClaimedJob, *, run_at: datetime, error_class: str = "", error_message: str = ""
) -> bool:
    """Hand a held job back as ``waiting`` until ``run_at``, its attempt uncounted; fenced."""
    run_query(
        cursor,
        "job_suspend",
        {
            "id": job.id,
            "fence": job.fence,
            "run_at": run_at,
            "error_class": error_class,
            "error_message": error_message,
        },
    )
    return cursor.rowcount == 1


def suspend_for_event(
    cursor, job: ClaimedJob, *, lock_id: int, event: str, since, match: str, now, run_at
) -> bool:
    """Like ``suspend`` for an event wait: due at once if a matching event already arrived.

    Call inside a transaction: the event's advisory lock orders it against publishers.
    """
    run_query(cursor, "event_lock", {"lock_id": lock_id})
    run_query(
        cursor,
        "job_suspend_for_event",
        {
            "id": job.id,
            "fence": job.fence,
            "event": event,
            "since": since,
            "match": match,
            "now": now,
            "run_at": run_at,
        },
    )
    return cursor.rowcount == 1
