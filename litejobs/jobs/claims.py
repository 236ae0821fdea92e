"""The claim: due jobs taken under a lease, each with a new fencing value.

One statement claims a batch of due jobs (``FOR UPDATE SKIP LOCKED``, by priority then
``run_at``) and gives each a lease owner, a lease expiry on the database's clock and a fence
from the ``litejobs_fence`` sequence; every later write about that run names the fence
(``litejobs.jobs.transitions``). Concurrency- and rate-limited jobs are claimed apart, under
a transaction-scoped advisory lock, never more per key than its limit, and never more starts
per rate key in a window than its rate (two statements in one transaction).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, NotRequired, TypedDict, Unpack, cast

from ..core.clock import lease_instant
from ..sql.cursors import Cursor, fetch_all, fetch_one, run_query

#: pg_advisory_xact_lock key serialising claims of concurrency-limited jobs.
LIMITED_CLAIM_LOCK = zlib.crc32(b"litejobs.claim_limited")


@dataclass
class ClaimedJob:
    """A job this worker holds under a lease, as the claim statement answered it, and what the
    worker learned about it while it was held."""

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
    #: The scheduled occurrence it runs, if any.
    occurrence_id: int | None = None
    #: The module that declares it (imported by a worker that does not know its name).
    module: str = ""
    #: Claimed by the limited claim: finishing frees a slot another job of its key waits for.
    limited: bool = False
    #: An operator asked to cancel it before it started.
    cancel_requested: bool = False
    #: Its lease was renewed by another claim (its fence is stale) before it started.
    lost: bool = False
    #: This worker could not renew its lease in time: it is cancelled and handed back.
    cut_off: bool = False

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ClaimedJob:
        """The job as the claim statements answer it (a row by column name)."""
        payload = row["payload"]
        if isinstance(payload, str):  # Django's adapters leave jsonb as text
            payload = json.loads(payload)
        return cls(
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
            occurrence_id=row["occurrence_id"],
            module=row["module"],
        )


class Ask(TypedDict):
    """What both claim statements are asked: for ``owner``, up to ``limit`` jobs of
    ``queues`` (empty: every queue) due at ``now``, each leased for ``lease`` from the
    database's clock, leaving the jobs whose ids are in ``avoid`` to other workers."""

    owner: str
    queues: Sequence[str]
    limit: int
    now: datetime
    lease: timedelta
    avoid: NotRequired[Sequence[int]]


def _claim_params(ask: Ask) -> dict[str, Any]:
    queues = ask["queues"]
    return {
        **ask,
        "queues": list(queues) if queues else None,
        "avoid": list(ask.get("avoid", ())),
        "db_now": lease_instant(),
    }


@dataclass(frozen=True)
class Claim:
    """What one claim statement answered: the jobs now held, and whether limited ones wait."""

    jobs: list[ClaimedJob]
    limited_due: bool


def claim(cursor: Cursor, **ask: Unpack[Ask]) -> Claim:
    """Claim due jobs without a concurrency limit, as ``ask`` says (commits with the cursor).

    The answer also says whether concurrency-limited jobs are due, so the (locking) limited
    claim runs only when it has something to take, and every worker takes every kind of job.
    """
    run_query(cursor, "claim", _claim_params(ask))
    answered = fetch_all(cursor)
    jobs = [ClaimedJob.from_row(found) for found in answered if found["id"] is not None]
    return Claim(jobs, limited_due=len(jobs) < len(answered))


@dataclass(frozen=True)
class LimitedClaim:
    """What the limited claim answered: the jobs now held, and when a rate-limited job it
    left waiting may start (the database's clock; None when none waits on a rate)."""

    jobs: list[ClaimedJob]
    wake_at: datetime | None


def claim_limited(cursor: Cursor, **ask: Unpack[Ask]) -> LimitedClaim:
    """Claim due concurrency- and rate-limited jobs, as ``ask`` says; call in a transaction
    (the lock holds until its end)."""
    run_query(cursor, "lock_limited_claims", {"lock_id": LIMITED_CLAIM_LOCK})
    run_query(cursor, "claim_limited", _claim_params(ask))
    answered = fetch_all(cursor)
    jobs = [
        replace(ClaimedJob.from_row(found), limited=True)
        for found in answered
        if found["id"] is not None
    ]
    wakes = [found["wake_at"] for found in answered if found["id"] is None]
    return LimitedClaim(jobs, wakes[0] if wakes else None)


def next_due(cursor: Cursor, *, queues: Sequence[str], now: datetime) -> datetime | None:
    """The earliest run_at after ``now`` of any claimable job in these queues."""
    run_query(cursor, "next_due", {"queues": list(queues) if queues else None, "now": now})
    due: datetime | None = cast("dict[str, Any]", fetch_one(cursor))["due"]  # an aggregate: a row
    return due
