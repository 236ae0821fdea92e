"""``litejobs.logging.JSONFormatter``: one JSON object per record, extras as keys."""

import json
import logging
from datetime import UTC, datetime

from litejobs.logging import JSONFormatter


def _record(**extra) -> logging.LogRecord:
    logger = logging.getLogger("litejobs.test")
    return logger.makeRecord(
        logger.name, logging.WARNING, __file__, 1, "got %s", ("it",), None, extra=extra
    )


def test_a_record_is_one_line_of_json_with_its_extras():
    record = _record(job_id=7, when=datetime(2026, 1, 1, tzinfo=UTC), note="two\nlines")
    line = JSONFormatter().format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["message"] == "got it"
    assert (entry["level"], entry["logger"]) == ("WARNING", "litejobs.test")
    assert abs(datetime.fromisoformat(entry["time"]).timestamp() - record.created) < 1e-5
    assert entry["job_id"] == 7
    assert entry["when"] == "2026-01-01 00:00:00+00:00"  # not JSON: its str
    assert entry["note"] == "two\nlines"
    for standard in ("args", "msg", "pathname", "lineno", "thread", "exc_info"):
        assert standard not in entry


def test_a_traceback_is_one_field():
    try:
        raise ValueError("broken")
    except ValueError:
        record = logging.getLogger("x").makeRecord(
            "x", logging.ERROR, __file__, 1, "failed", (), __import__("sys").exc_info()
        )
    entry = json.loads(JSONFormatter().format(record))
    assert "ValueError: broken" in entry["exception"]
