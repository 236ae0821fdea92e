"""The rate buckets in the admin, read-only: each rate key's limit and window, its starts in
the window now, the starts left and the next possible start. Only the limited claim writes
them."""

from __future__ import annotations

from django.contrib import admin

from ..admin.base import ReadOnlyAdmin
from ..core import clock, times
from ..core.durations import format_duration
from ..jobs.ratelimits import Window
from ..models import RateBucket


def _window(bucket: RateBucket) -> Window:
    """The bucket's starts inside its window as of now."""
    return Window.of(
        bucket.starts, bucket.counts, limit=bucket.limit, per=bucket.per, now=clock.now()
    )


@admin.register(RateBucket)
class RateBucketAdmin(ReadOnlyAdmin):
    """Rate keys and their windows (written by the claim alone)."""

    list_display = ("key", "rate", "starts_in_window", "starts_left", "next_start", "last_start_at")
    search_fields = ("key",)
    list_per_page = 50
    actions = None
    fields = ("key", "rate", "starts_in_window", "starts_left", "next_start", "last_start_at")
    readonly_fields = fields

    @admin.display(description="rate")
    def rate(self, bucket: RateBucket) -> str:
        """``100 per 1m``."""
        return f"{bucket.limit:,} per {format_duration(bucket.per)}"

    @admin.display(description="starts in the window")
    def starts_in_window(self, bucket: RateBucket) -> int:
        """Starts counted in the last ``per``."""
        return _window(bucket).used

    @admin.display(description="starts left")
    def starts_left(self, bucket: RateBucket) -> int:
        """Starts the claim may take now."""
        return _window(bucket).left

    @admin.display(description="next possible start")
    def next_start(self, bucket: RateBucket) -> str:
        """``now``, or when the oldest start that must leave the window leaves it."""
        next_start = _window(bucket).next_start
        return "now" if next_start is None else times.when(next_start, clock.now())
