"""The per-job log lines: made where they happen, written by one thread (no database)."""

import logging
import threading

import pytest

from litejobs.worker import joblines
from litejobs.worker.joblines import JobLines

logger = logging.getLogger("litejobs.worker.runner")


class Written(logging.Handler):
    """Each record it was handed, with the thread that handed it over."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[logging.LogRecord, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append((record, threading.current_thread().name))


@pytest.fixture
def written():
    handler = Written()
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def run_line(lines: JobLines, number: int) -> None:
    lines.info(logger, "job start id=%s", number)


def test_lines_of_many_threads_are_written_by_one_thread_in_order_each_its_makers(written):
    lines = JobLines()
    lines.start()
    makers = [
        threading.Thread(target=lambda n=n: [run_line(lines, n * 100 + i) for i in range(50)])
        for n in range(4)
    ]
    for maker in makers:
        maker.start()
    for maker in makers:
        maker.join()
    lines.stop()  # every line made so far is written when it returns
    assert len(written.seen) == 200
    assert {thread for _, thread in written.seen} == {"litejobs-log"}
    for maker in makers:  # each maker's lines in the order it made them, stamped as its own
        mine = [record for record, _ in written.seen if record.threadName == maker.name]
        assert [record.getMessage() for record in mine] == [
            f"job start id={int(mine[0].args[0]) + i}" for i in range(50)
        ]
        assert [record.created for record in mine] == sorted(record.created for record in mine)
    record = written.seen[0][0]
    assert (record.funcName, record.filename) == ("run_line", "test_joblines.py")


def test_nothing_is_made_when_info_is_off(written, monkeypatch):
    logger.setLevel(logging.WARNING)
    made = []
    monkeypatch.setattr(logger, "makeRecord", lambda *args, **kwargs: made.append(args))
    lines = JobLines()
    lines.start()
    run_line(lines, 1)
    lines.stop()
    assert made == [] and written.seen == []


def test_before_start_and_after_stop_the_maker_writes_its_own_line(written):
    lines = JobLines()
    run_line(lines, 1)
    lines.start()
    lines.stop()
    run_line(lines, 2)
    assert [(r.getMessage(), t) for r, t in written.seen] == [
        ("job start id=1", "MainThread"),
        ("job start id=2", "MainThread"),
    ]


def test_a_backlog_past_its_bound_is_written_by_the_maker(written, monkeypatch):
    monkeypatch.setattr(joblines, "BACKLOG", 3)
    release = threading.Event()
    handled = logging.Logger.handle

    def stalled(self, record):  # the log destination stalls
        if threading.current_thread().name == "litejobs-log":
            release.wait(5)
        handled(self, record)

    monkeypatch.setattr(logging.Logger, "handle", stalled)
    lines = JobLines()
    lines.start()
    for number in range(8):
        run_line(lines, number)
    release.set()
    lines.stop()
    by_maker = [r.getMessage() for r, t in written.seen if t == "MainThread"]
    assert len(by_maker) >= 4  # at most 3 waiting, 1 being written
    assert sorted(r.getMessage() for r, _ in written.seen) == sorted(
        f"job start id={n}" for n in range(8)
    )
