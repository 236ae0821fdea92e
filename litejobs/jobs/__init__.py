"""Jobs: declaring them, enqueueing them, and everything a claimed job goes through.

``declaration`` (``@job``), ``catalog`` (the one lookup of what runs a stored job),
``enqueue`` (the one INSERT path), ``claims`` (the claim: due jobs under a lease and a fence),
``leases`` (heartbeat renewal and reaping), ``transitions`` (the fenced completion, failure,
release, hand-back and suspension of a claimed job), ``context`` (``ctx``), ``steps`` and
``events`` (durable steps, and the events they wait for), ``workflows`` (sagas of use cases),
``operations`` (the operator's job verbs) and ``queues`` (pausing and resuming job queues).

This package's public face is the declaration API; import the rest from its module.
"""

from .arguments import Concurrency
from .declarations import JobDefinition, job, queue_name
from .enqueue import Enqueued, PreparedRow

__all__ = ["Concurrency", "Enqueued", "JobDefinition", "PreparedRow", "job", "queue_name"]
