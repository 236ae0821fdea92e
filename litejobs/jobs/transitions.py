"""Fenced transitions of claimed jobs, on any DB-API cursor (Django's or psycopg's).

Each function is one statement. Every write to a claimed job names its fencing value and
requires ``state = 'running'``: a write by a worker that lost its claim changes nothing and is
reported as refused (completion, failure, release, hand-back, suspension, progress).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import cast

from ..core.enums import JobState
from ..sql.cursors import Cursor, fetch_all, fetch_one, run_query
from .claims import ClaimedJob


def complete(cursor: Cursor, job: ClaimedJob, *, now: datetime, result_json: str | None) -> bool:
    """Mark a held job done; False when the fence is stale (another claim owns it)."""
    run_query(
        cursor,
        "complete",
        {"id": job.id, "fence": job.fence, "now": now, "result": result_json},
    )
    changed: int = cursor.rowcount
    return changed == 1


def complete_batch(
    cursor: Cursor, acks: Sequence[tuple[ClaimedJob, datetime, str | None]]
) -> set[int]:
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
    cursor: Cursor,
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
    terminal = state != JobState.FAILED
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


def discard(
    cursor: Cursor,
    job: ClaimedJob,
    *,
    now: datetime,
    error_class: str = "",
    error_message: str = "",
) -> bool:
    """Delete a spent job whose declaration keeps no dead letters (counted dead at ``now``);
    fenced. A job with a settle hook first keeps its final error, which its hook is told."""
    params = {"id": job.id, "fence": job.fence, "now": now}
    run_query(
        cursor,
        "note_drop",
        {**params, "error_class": error_class, "error_message": error_message},
    )
    run_query(cursor, "discard", params)
    return fetch_one(cursor) is not None


def hand_back(
    cursor: Cursor,
    job: ClaimedJob,
    *,
    now: datetime,
    grace: timedelta,
    error_class: str,
    error_message: str,
) -> datetime | None:
    """Hand a job this code cannot run back uncounted, due after a backoff; fenced.

    Answers when the job was first handed back, or None when the fence is stale or the grace
    since its first hand-back is spent.
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
    row = fetch_one(cursor)
    return None if row is None else cast("datetime", row["handed_back_at"])


def release(cursor: Cursor, jobs: Sequence[ClaimedJob]) -> set[int]:
    """Hand held jobs back to ``ready`` with their attempt uncounted; answers the ids released."""
    if not jobs:
        return set()
    run_query(cursor, "release", {"ids": [j.id for j in jobs], "fences": [j.fence for j in jobs]})
    return {found["id"] for found in fetch_all(cursor)}


def save_progress(cursor: Cursor, updates: Sequence[tuple[ClaimedJob, str]]) -> None:
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


def suspend(
    cursor: Cursor,
    job: ClaimedJob,
    *,
    run_at: datetime,
    error_class: str = "",
    error_message: str = "",
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
    changed: int = cursor.rowcount
    return changed == 1


def suspend_for_event(
    cursor: Cursor,
    job: ClaimedJob,
    *,
    lock_id: int,
    event: str,
    since: datetime | None,
    match: str | None,
    now: datetime,
    run_at: datetime,
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
    changed: int = cursor.rowcount
    return changed == 1
