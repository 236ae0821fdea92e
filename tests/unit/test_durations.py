"""Durations as people write them, read and shown."""

from datetime import timedelta

import pytest

from litejobs.core.durations import format_duration


@pytest.mark.parametrize(
    ("delta", "shown"),
    [
        (timedelta(days=90), "90d"),
        (timedelta(seconds=7.776e6), "90d"),
        (timedelta(hours=1, minutes=30), "1h30m"),
        (timedelta(seconds=10), "10s"),
        (timedelta(milliseconds=250), "250ms"),
        (timedelta(days=1, hours=1, minutes=1, seconds=1), "1d1h1m1s"),
        (timedelta(seconds=1.5), "1s500ms"),
        (timedelta(0), "0s"),
    ],
)
def test_a_duration_is_shown_as_it_is_written(delta, shown):
    assert format_duration(delta) == shown
