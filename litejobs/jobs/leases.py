"""Leases of claimed jobs, renewed by their worker's heartbeat; lapsed ones reaped.

A lease lives ``LEASE`` from its last renewal, written and compared on the database's clock.
Every ``HEARTBEAT`` a worker runs one statement that renews its ``Worker`` row and the leases
of every job it holds, learns which of them an operator asked to cancel, and reaps the jobs
whose lease lapsed on a lost worker (back to ``failed`` for a retry, or ``dead`` when their
attempts are spent, each with a ``lease_expired`` attempt in the history).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.clock import lease_instant
from ..sql.cursors import Cursor, fetch_all, run_query
from .claims import ClaimedJob


@dataclass(frozen=True)
class HeartbeatAnswer:
    """What a heartbeat learned: leases still ours, cancellations asked, jobs reaped, and
    whether jobs of the worker's queues are due."""

    renewed: set[int]
    cancel_requested: set[int]
    reaped: int
    due: bool = False


def heartbeat(
    cursor: Cursor,
    *,
    worker: dict[str, Any],
    held: Sequence[ClaimedJob],
    reap: bool,
    queues: Sequence[str] = (),
) -> HeartbeatAnswer:
    """Renew the Worker row and every held lease, reap leases that lapsed elsewhere, and
    look whether jobs of ``queues`` (all queues when empty) are due.

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
            "queues": list(queues) if queues else None,
        },
    )
    renewed: set[int] = set()
    cancel: set[int] = set()
    reaped = 0
    due = False
    for found in fetch_all(cursor):
        if found["id"] is None:
            due = True
        elif found["reaped"]:
            reaped += 1
            continue
        renewed.add(found["id"])
        if found["cancel_requested"]:
            cancel.add(found["id"])
    return HeartbeatAnswer(renewed, cancel, reaped, due)


def worker_stopped(cursor: Cursor, owner: str) -> None:
    """Remove the Worker row of a worker that exits cleanly."""
    run_query(cursor, "worker_stopped", {"owner": owner})


def end_session(cursor: Cursor, pid: int) -> bool:
    """End the database session ``pid`` of one of this worker's abandoned runners (its body
    may never give its connection back); answers whether there was one to end."""
    run_query(cursor, "session_end", {"pid": pid})
    return bool(fetch_all(cursor))
