"""``depends_on``: a job that waits until other jobs have ended.

The new job is inserted, then held (``waiting`` until ``WAITING_FOR_OTHERS``) while one of its
upstream jobs has not ended; each upstream's ending resolves its edge in the transaction that
writes it (the job table's trigger), and the last one releases the job — or, when an upstream
did not succeed, applies its ``on_upstream_failure``:

- ``cancel`` (the default): the job ends ``cancelled`` without running (error class
  ``litejobs.UpstreamFailed``), and what waits on it sees a failed upstream in turn;
- ``run``: it runs anyway, once every upstream has ended;
- ``skip``: it ends ``cancelled`` without running too (error class
  ``litejobs.UpstreamSkipped``), but what waits on it counts it as succeeded and goes on.

An upstream that has already ended, or that does not exist (never did, or was purged: a purge
deletes ended jobs only), is resolved at enqueue; a missing one counts as succeeded.

Cycles: an edge only ever points from a new job to jobs that exist already, so new jobs cannot
form a cycle. The one enqueue that could ask for one is answered by a live job already holding
its key (deduplicated): it adds no edge, and it is refused (``dependency-cycle``) when that job
is one of its upstream jobs or waits on one of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from ..core import clock
from ..core.enums import UpstreamPolicy
from ..jobs.enqueue import Enqueued
from ..sql.cursors import Cursor, fetch_one, run_query
from .errors import DependencyCycle, DependencyInvalid


def upstream_ids(depends_on: Any) -> list[int] | None:
    """The job ids ``depends_on`` names, in order and once each (``None``: no dependencies)."""
    if depends_on is None:
        return None
    if isinstance(depends_on, str | bytes | Mapping) or not isinstance(depends_on, Iterable):
        raise _invalid(depends_on)
    ids: list[int] = []
    for item in depends_on:
        if isinstance(item, Enqueued):
            item = item.id
        if isinstance(item, bool) or not isinstance(item, int) or item < 1:
            raise _invalid(item)
        if item not in ids:
            ids.append(item)
    return ids or None


def _invalid(value: Any) -> DependencyInvalid:
    return DependencyInvalid(
        f"depends_on takes a list of job ids or Enqueued answers (what enqueue returns), "
        f"e.g. depends_on=[fetch.enqueue(...)]; got {value!r}.",
        code="depends-on-invalid",
    )


def policy_of(value: str | None, upstreams: list[int] | None) -> UpstreamPolicy:
    """``on_upstream_failure`` as a policy (``cancel`` when not given)."""
    if value is None:
        return UpstreamPolicy.CANCEL
    if value not in UpstreamPolicy.values:
        raise DependencyInvalid(
            f"on_upstream_failure={value!r}: say 'cancel' (the default: the job ends "
            "cancelled without running), 'run' (it runs anyway) or 'skip' (it ends cancelled "
            "without running, and what waits on it goes on).",
            code="upstream-policy-invalid",
        )
    if upstreams is None:
        raise DependencyInvalid(
            f"on_upstream_failure={value!r} without depends_on: name the jobs it waits on.",
            code="upstream-policy-invalid",
        )
    return UpstreamPolicy(value)


def depend(
    cursor: Cursor,
    job: Enqueued,
    upstreams: list[int],
    policy: UpstreamPolicy,
    run_at: datetime,
) -> str:
    """Make ``job`` wait on ``upstreams``; answers its state after (``waiting`` while one has
    not ended). A deduplicated ``job`` gains no edge, and is refused when it would wait on
    itself."""
    if job.deduped:
        refuse_cycle(cursor, job.id, upstreams)
        return ""
    params = {
        "job": job.id,
        "upstreams": upstreams,
        "policy": policy.value,
        "run_at": run_at,
        "now": clock.now(),
    }
    run_query(cursor, "depend", params)
    found = fetch_one(cursor)
    return str(found["state"]) if found else ""


def refuse_cycle(cursor: Cursor, job_id: int, upstreams: list[int]) -> None:
    """Refuse ``job_id`` waiting on ``upstreams`` when it is one of them or one waits on it."""
    run_query(cursor, "dependency_cycle", {"job": job_id, "upstreams": upstreams})
    found = fetch_one(cursor)
    if found is None:
        return
    looped = found["id"]
    through = "itself" if looped == job_id else f"job {looped}, which waits on it"
    raise DependencyCycle(
        f"The enqueue was answered by live job {job_id} (it holds the key), and depends_on "
        f"would make it wait on {through}: it could never run. Drop job {looped} from "
        "depends_on, or give the new job its own key.",
        code="dependency-cycle",
    )
