"""The fixed bucket bounds of litejobs' duration and latency histograms, in seconds.

One place for them: the statements that settle jobs bucket durations with them, the per-minute
counters store their counts by them, and the dashboard and the metrics read them.
"""

from __future__ import annotations

__all__ = ["BUCKET_BOUNDS"]

#: Bucket 0 counts values below the first bound, bucket ``i`` values from bound ``i - 1`` up to
#: (not including) bound ``i``, the last one everything from the last bound on.
BUCKET_BOUNDS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)
