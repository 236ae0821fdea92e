"""Fleet-wide rate limits: ``Rate`` for ``@job(rate=…)`` and ``LITEJOBS["QUEUE_RATES"]``, and
the buckets the claim counts starts in (``buckets()``, each a ``Bucket``)."""

from ..jobs.ratelimits import MAX_LIMIT, Rate
from .windows import Bucket, buckets

__all__ = ["MAX_LIMIT", "Bucket", "Rate", "buckets"]
