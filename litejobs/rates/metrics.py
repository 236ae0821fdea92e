"""Rate limits' metric family (``Feature.metrics``; the metrics add-on serves it):

``litejobs_rate_limited_jobs{queue}``: due jobs waiting because their rate key has no start
left in its window (rate-limited waits), per queue. Labels are bounded by the queues.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from ..core.features import Family
from . import windows


def families(now: datetime) -> Iterator[Family]:
    """Rate-limited waits per queue."""
    waiting = Family(
        "litejobs_rate_limited_jobs",
        "Due jobs waiting because their rate key has no start left in its window.",
        ("queue",),
    )
    for queue, count in sorted(windows.waiting_by_queue().items()):
        waiting.add([queue], count)
    yield waiting
