"""The ``Settler``: where every held job's run ends.

A runner (or the main loop, for a run it abandons or a job it releases) hands it an
``Ending`` (``litejobs.worker.outcome``); the settler writes it under the claim's fence — a
failure or a hand-back on the calling thread's connection, riding out a database outage
(a dead job's completed steps undone first, last first), a release on the main loop's
connection, an ``atomic=False`` completion in the next batched acknowledgement, written by
the settler's acknowledgement thread — then counts it, logs the job's end line and stops
holding the job.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager as ContextManager
from datetime import datetime
from typing import Any

from django.db import connections, transaction

from ..conf import settings
from ..core import clock
from ..core.durations import format_duration
from ..core.enums import JobState, RunOutcome
from ..jobs import events, transitions
from ..jobs.claims import ClaimedJob
from ..jobs.steps import HELD, OperatorNeeded
from ..runtime.outage import Outage, is_outage
from ..sql.cursors import Cursor
from .acks import Acknowledgements
from .dispatch import Dispatcher
from .handbacks import HandedBack
from .holdings import Holdings
from .joblines import JobLines, job_fields
from .outcome import (
    MESSAGE_LIMIT,
    Completed,
    Crashed,
    Ending,
    Failed,
    HandBack,
    Pause,
    Refused,
    Release,
    Unfenced,
    failed,
)

logger = logging.getLogger(__name__)


class Settler:
    """Writes, counts and logs how each held job's run ended; thread-safe."""

    def __init__(
        self,
        *,
        owner: str,
        alias: str,
        holdings: Holdings,
        dispatcher: Dispatcher,
        handed_back: HandedBack,
        outage: Outage,
        stop_event: threading.Event,
        lines: JobLines,
    ) -> None:
        self.owner = owner
        self.alias = alias
        self.holdings = holdings
        self.dispatcher = dispatcher
        self.handed_back = handed_back
        self.outage = outage
        self.stop_event = stop_event
        self.lines = lines
        self.counts: dict[str, int] = {}
        self._counts_lock = threading.Lock()
        self._releases: list[tuple[ClaimedJob, float, str]] = []
        self._releases_lock = threading.Lock()
        self._acks: Acknowledgements | None = None
        self._acks_thread: threading.Thread | None = None
        self._acks_lock = threading.Lock()
        #: How each kind of ending is settled.
        self._settles: dict[type, Callable[[ClaimedJob, Any, float], None]] = {
            Completed: self._completed,
            Unfenced: self._unfenced,
            Release: self._release,
            Refused: self._refused,
            Failed: self._fail,
            HandBack: self._hand_back,
            Pause: self._pause,
            Crashed: self._crashed,
        }

    def settle(self, job: ClaimedJob, ending: Ending, started: float) -> None:
        """Write how the run of ``job`` ended (``started``: monotonic) and let the job go."""
        self._settles[type(ending)](job, ending, started)

    def summary(self) -> str:
        """``ended=17 done=15 failed=2``: how many held jobs ended, and how, so far, in the
        order of ``RunOutcome`` (the worker's stop line)."""
        with self._counts_lock:
            counts = dict(self.counts)
        shown = [f" {outcome}={counts[outcome]}" for outcome in RunOutcome if outcome in counts]
        return f"ended={sum(counts.values())}{''.join(shown)}"

    def finished(
        self, job: ClaimedJob, outcome: RunOutcome, started: float, error: str = ""
    ) -> None:
        """A held job reached an outcome; log its end line and stop holding it."""
        self.holdings.drop(job.id)
        if job.limited:  # its slot is free: another job of its key may be due
            self.dispatcher.poke()
        with self._counts_lock:
            self.counts[outcome] = self.counts.get(outcome, 0) + 1
        duration_ms = (time.monotonic() - started) * 1000
        fields = job_fields(job, outcome=str(outcome), duration_ms=round(duration_ms, 1))
        if error:
            fields["error"] = error
        self.lines.info(
            logger,
            "job end id=%s name=%s outcome=%s attempt=%s duration_ms=%.1f%s",
            job.id,
            job.name,
            outcome,
            job.attempt,
            duration_ms,
            f" error={error}" if error else "",
            extra=fields,
        )

    # Releases, on the main loop's connection ------------------------------------------------

    def release_pending(self, cursor: Callable[[], ContextManager[Cursor]]) -> None:
        """Hand back the jobs waiting for it (one statement on a ``cursor()`` of the main
        loop's connection); a failed write keeps them for the next try."""
        with self._releases_lock:
            pending, self._releases = self._releases, []
        if not pending:
            return
        try:
            with cursor() as on:
                released = transitions.release(on, [job for job, _, _ in pending])
        except Exception:
            with self._releases_lock:
                self._releases = pending + self._releases
            raise
        for job, started, why in pending:
            logger.info("job released id=%s name=%s why=%s", job.id, job.name, why)
            self.finished(
                job, RunOutcome.RELEASED if job.id in released else RunOutcome.REFUSED, started
            )

    def stop(self) -> None:
        """Flush the batched acknowledgements still pending."""
        if self._acks is not None and self._acks_thread is not None:
            self._acks.close()
            self._acks_thread.join()

    # Each kind of ending ---------------------------------------------------------------------

    def _completed(self, job: ClaimedJob, ending: Completed, started: float) -> None:
        self.finished(job, RunOutcome.DONE, started)

    def _unfenced(self, job: ClaimedJob, ending: Unfenced, started: float) -> None:
        self._acknowledgements().add(job, ending.result_json, started)

    def _release(self, job: ClaimedJob, ending: Release, started: float) -> None:
        if ending.error is not None:  # this thread's transaction broke with the database
            connections[self.alias].close()
            self.outage.failed(ending.error)
        with self._releases_lock:
            self._releases.append((job, started, ending.why))

    def _refused(self, job: ClaimedJob, ending: Refused, started: float) -> None:
        if ending.reason:
            logger.warning(
                "job refused id=%s name=%s fence=%s reason=%s",
                job.id,
                job.name,
                job.fence,
                ending.reason,
            )
        self.finished(job, RunOutcome.REFUSED, started)

    def _crashed(self, job: ClaimedJob, ending: Crashed, started: float) -> None:
        self.finished(job, RunOutcome.ERROR, started)

    # Fenced writes, on the calling thread's connection --------------------------------------

    def _write(self, write: Callable[[Any], bool]) -> bool:
        """Run ``write(cursor)`` on this thread's connection, riding out outages until stopped."""
        while True:
            try:
                with connections[self.alias].cursor() as cursor:
                    written = write(cursor)
            except Exception as error:
                if not is_outage(error):
                    raise
                if self.outage.wait_out(error, connections[self.alias], self.stop_event):
                    return False
                continue
            self.outage.succeeded()
            return bool(written)

    # Batched acknowledgements, on the settler's own thread ----------------------------------

    def _acknowledgements(self) -> Acknowledgements:
        with self._acks_lock:
            if self._acks is None:
                self._acks = Acknowledgements(
                    alias=self.alias,
                    outage=self.outage,
                    stop_event=self.stop_event,
                    batch=settings.ACK_BATCH,
                    flush_seconds=settings.duration("ACK_FLUSH").total_seconds(),
                )
                self._acks_thread = threading.Thread(
                    target=self._acknowledge, args=(self._acks,), name="litejobs-acks", daemon=True
                )
                self._acks_thread.start()
            return self._acks

    def _acknowledge(self, acks: Acknowledgements) -> None:
        """The acknowledgement thread: write each batch, then end its jobs as it came out."""
        try:
            while (batch := acks.take()) is not None:
                for acked in acks.write(batch):
                    self.finished(acked.job, acked.outcome, acked.started)
        finally:
            connections.close_all()

    # Failures, hand-backs and pauses, on the calling thread's connection ---------------------

    def _fail(self, job: ClaimedJob, ending: Failed, started: float) -> None:
        """A failed attempt: a dead job's completed steps are undone first (last first; never
        on a retry), and its message says which compensations failed."""
        # Scrubbed as a whole, after everything is appended, before it is cut to length.
        message = ending.scrub(ending.message + _compensate(ending))[:MESSAGE_LIMIT]
        failure = ending.failure
        if failure.discard:
            logger.error(
                "job dropped id=%s name=%s attempt=%s error=%s (dead_letter=False)",
                job.id,
                job.name,
                job.attempt,
                failure.error_class,
            )
        written = self._write(
            lambda cursor: (
                transitions.discard(
                    cursor,
                    job,
                    now=failure.at,
                    error_class=failure.error_class,
                    error_message=message,
                )
                if failure.discard
                else transitions.fail(
                    cursor,
                    job,
                    owner=self.owner,
                    now=failure.at,
                    state=failure.state,
                    run_at=failure.run_at,
                    outcome=failure.outcome,
                    error_class=failure.error_class,
                    error_message=message,
                    error_traceback=ending.traceback,
                )
            )
        )
        outcome = RunOutcome(failure.state) if written else RunOutcome.REFUSED
        self.finished(job, outcome, started, error=failure.error_class)

    def _hand_back(self, job: ClaimedJob, ending: HandBack, started: float) -> None:
        """This code cannot run the job (a newer release enqueued it): hand it back uncounted
        for a worker that can; once ``UNKNOWN_JOB_GRACE`` has passed since the first hand-back,
        dead-letter it with the reason instead."""
        error = ending.error
        grace = settings.duration("UNKNOWN_JOB_GRACE")
        message = f"Waiting for a worker that can run it: {error.args[0]}"
        first: dict[str, datetime] = {}

        def write(cursor: Cursor) -> bool:
            when = transitions.hand_back(
                cursor,
                job,
                now=clock.now(),
                grace=grace,
                error_class=f"litejobs.{type(error).__name__}",
                error_message=message,
            )
            if when is not None:
                first["handed_back_at"] = when
            return when is not None

        if self._write(write):
            # Left to the other workers, so this one does not win it back as it falls due.
            self.handed_back.add(job.id, first["handed_back_at"] + grace)
            logger.warning(
                "job handed back id=%s name=%s version=%s code=%s: no declaration here can run "
                "it; a worker that can will take it",
                job.id,
                job.name,
                job.version,
                error.code,
            )
            self.finished(job, RunOutcome.HANDED_BACK, started)
            return
        spent = type(error)(
            f"{error.args[0]} No worker that can run it took it within UNKNOWN_JOB_GRACE "
            f"({format_duration(grace)}) of its first hand-back."
        )
        self._fail(job, failed(job, None, spent), started)

    def _pause(self, job: ClaimedJob, ending: Pause, started: float) -> None:
        """The body sleeps, waits for an event, or waits for an operator: hand the job back."""
        signal = ending.signal

        def write(cursor: Cursor) -> bool:
            if isinstance(signal, OperatorNeeded):
                return transitions.suspend(
                    cursor,
                    job,
                    run_at=HELD,
                    error_class="litejobs.StepOutcomeUnknown",
                    error_message=signal.message,
                )
            if not signal.event:
                return transitions.suspend(cursor, job, run_at=signal.wake_at)
            with transaction.atomic(using=self.alias):
                return transitions.suspend_for_event(
                    cursor,
                    job,
                    lock_id=events.lock_id(signal.event),
                    event=signal.event,
                    since=signal.since,
                    match=signal.match,
                    now=clock.now(),
                    run_at=signal.wake_at,
                )

        written = self._write(write)
        outcome = RunOutcome.HELD if isinstance(signal, OperatorNeeded) else RunOutcome.WAITING
        self.finished(job, outcome if written else RunOutcome.REFUSED, started)


def _compensate(ending: Failed) -> str:
    """Undo the completed steps of a run that failed for good, last first; answers what its
    message adds (which compensations failed, their texts scrubbed by the steps)."""
    steps = ending.steps
    if ending.failure.state != JobState.DEAD or steps is None or not steps.has_compensations:
        return ""
    failures = steps.compensate()
    return " | compensations failed: " + "; ".join(failures) if failures else ""
