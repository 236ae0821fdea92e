"""The placer enqueues hand their inserts to (``litejobs.jobs.placement``): the jobs join the
open batch, and a job given ``depends_on`` waits on its upstream jobs, in one atomic block
with the insert, so a rolled-back enqueue leaves no membership and no edge behind."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from django.db import connections, transaction

from ..conf import settings
from ..jobs.enqueue import Enqueued
from ..jobs.placement import Placing
from ..sql.cursors import Cursor, fetch_one, run_query
from . import dependencies
from .blocks import open_batch
from .errors import BatchClosed


class BatchPlacer:
    """Places enqueued jobs in the open batch and behind their upstream jobs."""

    def place(self, insert: Callable[[], Sequence[Enqueued]], placing: Placing) -> list[Enqueued]:
        """Run ``insert``, join what it inserted to the open batch, then make each wait on
        the jobs ``placing`` names (refused before anything is written when they are not job
        ids)."""
        upstreams = dependencies.upstream_ids(placing.depends_on)
        policy = dependencies.policy_of(placing.on_upstream_failure, upstreams)
        batch = open_batch()
        alias = settings.DATABASE
        with transaction.atomic(using=alias):
            enqueued = list(insert())
            with connections[alias].cursor() as cursor:
                if batch is not None:
                    join(cursor, batch.id, [job.id for job in enqueued])
                if upstreams is not None:
                    for job in enqueued:
                        dependencies.depend(cursor, job, upstreams, policy, placing.run_at)
        return enqueued

    def active(self) -> bool:
        """Whether a batch is open here."""
        return open_batch() is not None


def join(cursor: Cursor, batch_id: int, ids: list[int]) -> int:
    """``ids`` join the open batch ``batch_id``; answers how many joined (a job already in a
    batch or ended joins no other). ``BatchClosed`` when its callback was released."""
    run_query(cursor, "batch_join", {"batch": batch_id, "ids": ids})
    found = fetch_one(cursor)
    if not found or not found["open"]:
        raise BatchClosed(
            f"Batch {batch_id} is closed: every child had ended and its callback was released. "
            "Add children from a running child of the batch, or open a new batch.",
            code="batch-closed",
        )
    return int(found["joined"])
