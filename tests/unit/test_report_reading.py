"""A report run's pages read a page ahead, on a thread of its own, while the worker writes the
page before."""

from __future__ import annotations

import threading

import pytest

from litejobs.reports.reading import ReadAhead
from tests.conftest import wait_for


class Keys:
    """A fake page reader over the keys 1..total: records each read and its thread."""

    def __init__(self, total: int, fail_after: int | None = None) -> None:
        self.total = total
        self.fail_after = fail_after
        self.calls: list[tuple[int, int]] = []
        self.threads: set[str] = set()

    def __call__(self, after: int, limit: int) -> list[tuple[int]]:
        self.calls.append((after, limit))
        self.threads.add(threading.current_thread().name)
        if after == self.fail_after:
            raise RuntimeError(f"the page after {after} failed")
        return [(key,) for key in range(after + 1, min(after + limit, self.total) + 1)]


def test_a_full_page_starts_the_read_of_the_next_one_before_it_is_asked_for():
    keys = Keys(total=12)
    reader = ReadAhead(keys, "default")
    try:
        assert reader.page(0, 5, following=5) == [(1,), (2,), (3,), (4,), (5,)]
        # The next page is read while the caller writes this one.
        wait_for(lambda: keys.calls == [(0, 5), (5, 5)], timeout=5, what="the read ahead")
        assert reader.page(5, 5, following=5) == [(n,) for n in range(6, 11)]
        assert reader.page(10, 5, following=5) == [(11,), (12,)]
    finally:
        reader.close()
    # Each page read once, the short last one reading nothing after it, all on one other thread.
    assert keys.calls == [(0, 5), (5, 5), (10, 5)]
    assert len(keys.threads) == 1 and threading.current_thread().name not in keys.threads


def test_a_page_other_than_the_one_read_ahead_is_read_as_asked():
    keys = Keys(total=100)
    reader = ReadAhead(keys, "default")
    try:
        reader.page(0, 5, following=3)
        # The caller asks for a smaller page than it announced (its bounds changed).
        assert reader.page(5, 2, following=0) == [(6,), (7,)]
    finally:
        reader.close()
    assert keys.calls == [(0, 5), (5, 3), (5, 2)]


def test_a_failed_read_ahead_fails_the_page_that_asks_for_it():
    keys = Keys(total=100, fail_after=5)
    reader = ReadAhead(keys, "default")
    try:
        assert len(reader.page(0, 5, following=5)) == 5
        with pytest.raises(RuntimeError, match="the page after 5 failed"):
            reader.page(5, 5, following=5)
    finally:
        reader.close()
