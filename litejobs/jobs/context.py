"""``ctx``: what a running job body knows about its run, and how it hears it must stop."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from ..core.enums import CancelReason
from ..exceptions import Cancelled, InvalidInput


class JobContext:
    """The first argument of every job body.

    ``job_id``, ``attempt`` (1-based), ``final_attempt``, ``tenant``, ``queue``, ``key``,
    ``occurrence`` (the scheduled occurrence this run serves, if any), ``cancelled`` (an event
    set when the run must stop: timeout, worker drain, operator cancel, lost lease) and
    ``check_cancelled()`` which raises ``litejobs.Cancelled`` once it is set, and ``step``
    (durable steps: ``run``, ``sleep``, ``wait_for_event``; see ``litejobs.jobs.steps``).
    """

    def __init__(
        self,
        *,
        job_id: int,
        name: str,
        attempt: int,
        max_attempts: int,
        tenant: str,
        queue: str,
        key: str,
        progress_sink: Callable[[int, dict[str, Any]], None] | None = None,
        occurrence: Any = None,
    ) -> None:
        self.job_id = job_id
        self.name = name
        self.attempt = attempt
        self.final_attempt = attempt >= max_attempts
        self.tenant = tenant or None
        self.queue = queue
        self.key = key
        self.occurrence = occurrence
        self.cancelled = threading.Event()
        #: Why the cancellation fired (``CancelReason``), once it has.
        self.cancel_reason: CancelReason | None = None
        self._progress_sink = progress_sink
        self.step: Any = None  # litejobs.jobs.steps.Steps, set by the worker for each run

    def __repr__(self) -> str:
        return f"<JobContext {self.name} #{self.job_id} attempt {self.attempt}>"

    def cancel(self, reason: CancelReason) -> bool:
        """Fire the cancellation (first reason wins); answers whether it was this call."""
        if self.cancelled.is_set():
            return False
        self.cancel_reason = reason
        self.cancelled.set()
        return True

    def check_cancelled(self) -> None:
        """Raise ``Cancelled`` if the run must stop; call it between units of work."""
        if self.cancelled.is_set():
            raise Cancelled(self.cancel_reason or "cancelled")

    def progress(self, done: int, total: int | None = None, note: str = "") -> None:
        """Report progress; written at most once a second (the latest value wins)."""
        if not isinstance(done, int) or (total is not None and not isinstance(total, int)):
            raise InvalidInput(
                "progress(done, total) takes whole numbers.", code="progress-invalid"
            )
        if self._progress_sink is not None:
            self._progress_sink(
                self.job_id, {"done": done, "total": total, "note": str(note)[:200]}
            )


#: The context of the job body running on this thread (``None`` outside a body).
RUNNING: ContextVar[JobContext | None] = ContextVar("litejobs_running_job", default=None)


def running() -> JobContext | None:
    """The context of the job body running here, if any."""
    return RUNNING.get()
