"""``JSONFormatter``: one JSON object per log line, for log pipelines that parse rather than read.

Each object has ``time`` (ISO 8601, UTC, to the microsecond), ``level``, ``logger`` and
``message`` (the line's text, as the plain formatter writes it), then every structured field
the record carries — the attributes a caller gave as ``extra``, such as the worker's ``job
start`` and ``job end`` lines' ``job_id``, ``job_name``, ``queue``, ``attempt``,
``max_attempts``, ``outcome``, ``duration_ms`` and ``error`` — and ``exception`` when the
record has a traceback. A value JSON cannot hold is written as its ``str``.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

#: The attributes every ``LogRecord`` has (``message`` and ``asctime`` once formatted): what a
#: record holds beyond them came from ``extra``.
_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}


class JSONFormatter(logging.Formatter):
    """A ``logging.Formatter`` writing each record as one line of JSON (name it in ``LOGGING``:
    ``"formatters": {"json": {"()": "litejobs.logging.JSONFormatter"}}``)."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one JSON object, without a newline inside it."""
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update(fields_of(record))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def fields_of(record: logging.LogRecord) -> dict[str, Any]:
    """The structured fields of ``record``: its attributes that ``extra`` gave it."""
    return {
        name: value
        for name, value in vars(record).items()
        if name not in _STANDARD and not name.startswith("_")
    }
