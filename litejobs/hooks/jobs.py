"""The job that runs settle hooks, ``litejobs.settled``.

The job table's triggers (``litejobs.models.hooks``) insert one for each ending of a job whose
declaration has ``on_settled=``, in the job's queue, under its tenant, in the statement that
writes the ending. It looks the declaration up by name and calls its hook with a ``Settled``;
a hook that raises fails this job, which retries on its own policy (``HOOK_ATTEMPTS`` tries,
``TIMEOUT`` each) and ends dead — the job it reports on is never touched.
"""

from __future__ import annotations

import logging
from typing import Any

from ..core.enums import SettleOutcome
from ..core.retry import Retry
from ..jobs import catalog
from ..jobs.context import JobContext
from ..jobs.declarations import job
from ..jobs.endings import dotted_path
from ..models.hooks import HOOK_ATTEMPTS, SETTLED_JOB
from .settled import Settled, SettledError

__all__ = ["TIMEOUT", "settled"]

logger = logging.getLogger(__name__)

#: How long one call of a hook may take.
TIMEOUT = "30s"


@job(
    name=SETTLED_JOB,
    key=lambda job_id, name, outcome: f"{job_id}:{outcome}",
    timeout=TIMEOUT,
    retry=Retry(attempts=HOOK_ATTEMPTS, backoff="exponential", base="5s", max="1m"),
)
def settled(
    ctx: JobContext,
    job_id: int,
    name: str,
    outcome: str,
    result: Any = None,
    error_class: str = "",
    error_message: str = "",
) -> dict[str, Any]:
    """Call the settle hook of job ``name`` with how its run ``job_id`` ended."""
    hook = getattr(catalog.get(name), "on_settled", None)
    if hook is None:  # the declaration dropped its hook since the job was enqueued
        logger.warning("settle hook gone job=%s name=%s outcome=%s", job_id, name, outcome)
        return {"hook": None}
    value = Settled(
        job_id=job_id,
        name=name,
        outcome=SettleOutcome(outcome),
        result=result,
        error=SettledError(error_class, error_message) if error_class else None,
        key=ctx.key,
        attempt=ctx.attempt,
        tenant=ctx.tenant,
    )
    try:
        hook(value)
    except Exception:
        logger.exception(
            "settle hook failed job=%s name=%s outcome=%s attempt=%s final=%s",
            job_id,
            name,
            outcome,
            ctx.attempt,
            ctx.final_attempt,
        )
        raise
    return {"hook": dotted_path(hook)}
