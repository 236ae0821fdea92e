"""The per-job log lines (``job start``, ``job end``), written by one thread of the worker.

Several runner threads logging two lines a job each queued on the log handler's lock while
another wrote (a write releases the GIL with the lock still held), and at thousands of jobs a
second that queueing cost more CPU than the jobs themselves. Each line is still made where it
happens — its time, thread and caller are the event's — and is then handed, in order, to its
logger's handlers and filters on this one thread.

Each line also carries its facts as structured fields (``job_fields``): attributes of the
record, which the text leaves as it is and ``litejobs.logging.JSONFormatter`` writes as keys.
"""

from __future__ import annotations

import logging
import threading
from queue import SimpleQueue
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..jobs.claims import ClaimedJob

#: Past this many unwritten lines the calling thread writes its own: a log destination that
#: stalls slows the jobs down rather than growing the backlog without bound.
BACKLOG = 10_000


def job_fields(job: ClaimedJob, **more: Any) -> dict[str, Any]:
    """The structured fields of a job's line: which job, which attempt, where (and ``more``:
    the end line's ``outcome``, ``duration_ms`` and ``error``). Their names avoid the
    attributes ``logging.LogRecord`` has, which ``extra`` may not replace."""
    return {
        "job_id": job.id,
        "job_name": job.name,
        "queue": job.queue,
        "attempt": job.attempt,
        "max_attempts": job.max_attempts,
        **more,
    }


class JobLines:
    """Writes the per-job INFO lines of one worker; every line made before ``stop()`` returns
    has been handed to its handlers. Before ``start()`` and after ``stop()`` each line is
    written by the thread that makes it."""

    def __init__(self) -> None:
        self._records: SimpleQueue[logging.LogRecord | None] = SimpleQueue()
        self._thread = threading.Thread(target=self._write, name="litejobs-log", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def info(
        self, logger: logging.Logger, msg: str, *args: Any, extra: dict[str, Any] | None = None
    ) -> None:
        """``logger.info(msg, *args, extra=extra)``, written by the lines' thread; nothing is
        built when the logger is not enabled for INFO. ``extra`` becomes attributes of the
        record, the structured fields a formatter (``litejobs.logging.JSONFormatter``) reads."""
        if not logger.isEnabledFor(logging.INFO):
            return
        path, line, function, _ = logger.findCaller(stacklevel=2)
        record = logger.makeRecord(
            logger.name, logging.INFO, path, line, msg, args, None, function, extra
        )
        if self._thread.is_alive() and self._records.qsize() < BACKLOG:
            self._records.put(record)
        else:
            logger.handle(record)

    def stop(self) -> None:
        """Write every line made so far, then end the thread."""
        if self._thread.is_alive():
            self._records.put(None)
            self._thread.join()
        # A line queued after the end marker, as the thread stopped.
        while not self._records.empty():
            _handle(self._records.get())

    def _write(self) -> None:
        while (record := self._records.get()) is not None:
            _handle(record)


def _handle(record: logging.LogRecord | None) -> None:
    if record is not None:
        logging.getLogger(record.name).handle(record)
