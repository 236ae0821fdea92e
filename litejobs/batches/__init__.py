"""Batches with one callback, and jobs that wait on other jobs.

``with litejobs.batch(on_complete=summary, on_failure=alert) as b:`` — every job enqueued in
the block is a child of the batch; ``summary`` is enqueued once, in the transaction that ends
the last child, called with ``batch_id``, ``done``, ``dead`` and ``cancelled``.
``litejobs.batch.current()`` answers the running child's batch, to add children from inside
one. ``job.enqueue(..., depends_on=[...], on_upstream_failure="cancel")`` makes a job wait
until each of the named jobs has ended.
"""

from ..core.enums import UpstreamPolicy
from .blocks import Batch, batch
from .errors import BatchClosed, BatchInvalid, BatchNotFound, DependencyCycle, DependencyInvalid

__all__ = [
    "Batch",
    "BatchClosed",
    "BatchInvalid",
    "BatchNotFound",
    "DependencyCycle",
    "DependencyInvalid",
    "UpstreamPolicy",
    "batch",
]
