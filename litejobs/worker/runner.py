"""A worker thread: claim, run the body, write the outcome under the claim's fence."""

from __future__ import annotations

import logging
import threading
import time
import traceback
from typing import TYPE_CHECKING, Any

from django.db import connections, transaction

from ..conf import settings
from ..core import clock
from ..core.payloads import Scrubber, dumps
from ..core.tracing import use_traceparent
from ..exceptions import Cancelled, PayloadTooNew, RetryAfter, StaleFence, UnknownJob
from ..jobs import catalog, events, transitions
from ..jobs.claims import ClaimedJob
from ..jobs.context import JobContext
from ..jobs.steps import HELD, OperatorNeeded, Steps, Suspended
from ..runtime.outage import is_outage
from ..sql import hot_cursor

if TYPE_CHECKING:
    from ..jobs.declaration import JobDefinition
    from .process import Worker

logger = logging.getLogger("litejobs.worker")

MESSAGE_LIMIT = 2000
TRACEBACK_LIMIT = 20000


class Runner(threading.Thread):
    """One of ``--concurrency`` threads, each with its own database connection."""

    def __init__(self, worker: Worker, number: int) -> None:
        super().__init__(name=f"litejobs-runner-{number}", daemon=True)
        self.worker = worker
        self.retired = False  # set when its job was abandoned: exit after it returns
        self.current: ClaimedJob | None = None
        self.current_lock = threading.Lock()
        self._pg_conn = None

    # The thread --------------------------------------------------------------------------

    def run(self) -> None:
        try:
            while not self.retired:
                job = self.worker.dispatcher.next(self._claim)
                if job is None:
                    return
                try:
                    self.execute(job)
                except Exception as error:
                    # A bug of ours must not take the thread down: stop holding the job, and
                    # its lease lapses and another worker's heartbeat reaps it.
                    logger.error(
                        "job runner error id=%s name=%s\n%s",
                        job.id,
                        job.name,
                        scrubber_for(job)("".join(traceback.format_exception(error))),
                    )
                    self.worker.finished(job, "error", time.monotonic())
                finally:
                    self.worker.dispatcher.done_with_one()
        finally:
            connections.close_all()

    def _claim(self, limit: int) -> list[ClaimedJob]:
        worker = self.worker
        while not worker.dispatcher.stopping:
            try:
                jobs = worker.claim_on(connections[worker.alias], limit)
            except Exception as error:
                if not is_outage(error):
                    raise
                connections[worker.alias].close()
                worker.stop_event.wait(worker.outage.failed(error))
                continue
            worker.outage.succeeded()
            return jobs
        return []

    # One job -----------------------------------------------------------------------------

    def execute(self, job: ClaimedJob) -> None:
        """Run one held job to an outcome written under its fence."""
        worker = self.worker
        started = time.monotonic()
        if job.cut_off:  # its lease went unrenewed while it waited in the buffer
            worker.release_later(job, started, "lease not renewed")
            return
        try:
            run = catalog.run_of(job)
            definition = run.definition
            if job.version > definition.version:
                raise PayloadTooNew(
                    f"Job {job.name!r} #{job.id} has a version {job.version} payload; this "
                    f"worker's code declares version {definition.version}. Deploy the release "
                    "that declares it to every worker."
                )
        except UnknownJob as error:  # a newer release enqueued it: wait for a worker that knows
            self._hand_back(job, error, started)
            return
        ctx = JobContext(
            job_id=job.id,
            name=job.name,
            attempt=job.attempt,
            max_attempts=job.max_attempts,
            tenant=job.tenant,
            queue=job.queue,
            key=job.key,
            progress_sink=worker.record_progress,
            occurrence=run.occurrence,
        )
        ctx.step = Steps(
            job=job, atomic=definition.atomic, alias=worker.alias, sensitive=definition.sensitive
        )
        if job.lost:  # its lease lapsed while it waited in the buffer
            worker.finished(job, "refused", started)
            return
        if job.cancel_requested:  # an operator cancelled it before it started
            ctx.cancel("cancel")
            self._write_failure(job, definition, ctx, Cancelled("cancel"), started)
            return
        with self.current_lock:
            self.current = job
            self._pg_conn = None
        worker.holdings.start(job, ctx, definition.timeout.total_seconds(), self)
        logger.info(
            "job start id=%s name=%s attempt=%s/%s queue=%s",
            job.id,
            job.name,
            job.attempt,
            job.max_attempts,
            job.queue,
        )
        try:
            with use_traceparent(job.traceparent):
                if definition.atomic:
                    self._run_atomic(job, definition, ctx, started)
                else:
                    self._run_unfenced(job, definition, ctx, started)
        except BaseException as error:
            self._handle_error(job, definition, ctx, error, started)
        finally:
            with self.current_lock:
                self.current = None
                self._pg_conn = None

    def _run_atomic(self, job, definition: JobDefinition, ctx: JobContext, started) -> None:
        alias = self.worker.alias
        connection = connections[alias]
        with transaction.atomic(using=alias):
            # A timeout may cancel the statement the body runs, never the failure write after.
            with self.current_lock:
                self._pg_conn = connection.connection
            try:
                result = definition.invoke(ctx, job.payload, job.version)
                result_json = _result_json(job, result)
                if ctx.cancel_reason in ("lease_lost", "abandoned"):
                    raise StaleFence(f"job {job.id} lost its claim before completing")
                with hot_cursor(connection) as cursor:
                    if not transitions.complete(
                        cursor, job, now=clock.now(), result_json=result_json
                    ):
                        raise StaleFence(
                            f"completion of job {job.id} with fence {job.fence} refused: "
                            "another claim owns it; the body's writes are rolled back"
                        )
            finally:
                with self.current_lock:
                    self._pg_conn = None
        self.worker.finished(job, "done", started)

    def _run_unfenced(self, job, definition: JobDefinition, ctx: JobContext, started) -> None:
        result = definition.invoke(ctx, job.payload, job.version)
        if ctx.cancel_reason in ("lease_lost", "abandoned"):
            raise StaleFence(f"job {job.id} lost its claim before completing")
        self.worker.acknowledge(job, _result_json(job, result), started)

    # Failures ----------------------------------------------------------------------------

    def _handle_error(self, job, definition, ctx: JobContext, error: BaseException, started):
        worker = self.worker
        reason = ctx.cancel_reason
        if isinstance(error, Suspended | OperatorNeeded) and reason is None:
            self._suspend(job, error, started)
            return
        if reason == "lease_lost" and job.cut_off:
            # This worker could not renew the lease: nothing is written for the run, and the
            # job goes back uncounted unless another worker has taken it over meanwhile.
            worker.release_later(job, started, "lease not renewed")
            return
        if isinstance(error, StaleFence) or reason in ("lease_lost", "abandoned"):
            logger.warning(
                "job refused id=%s name=%s fence=%s reason=%s",
                job.id,
                job.name,
                job.fence,
                reason or "stale-fence",
            )
            worker.finished(job, "refused", started)
            return
        if is_outage(error):
            connections[worker.alias].close()
            worker.outage.failed(error)
            worker.release_later(job, started, "database unavailable")
            return
        if reason == "drain":
            worker.release_later(job, started, "interrupted by drain")
            return
        if not isinstance(error, Exception) and not isinstance(error, Cancelled):
            # KeyboardInterrupt/SystemExit inside a body: hand the job back, then re-raise.
            worker.release_later(job, started, type(error).__name__)
            raise error
        self._write_failure(job, definition, ctx, error, started)

    def _write_failure(self, job, definition, ctx, error, started, give_up: bool = False) -> None:
        worker = self.worker
        reason = ctx.cancel_reason if ctx else None
        now = clock.now()
        outcome, state, run_at = "failed", "failed", None
        if reason == "cancel" and isinstance(error, Cancelled):
            outcome, state = "cancelled", "cancelled"
        else:
            if reason == "timeout":
                outcome = "timeout"
            spent = job.attempt >= job.max_attempts
            if give_up or spent or (definition and definition.retry.gives_up_on(error)):
                state = "dead"
            elif isinstance(error, RetryAfter):  # the body knows when to try again
                run_at = now + error.delay
            else:
                run_at = now + definition.retry.delay(job.attempt, seed=str(job.id))
        scrub = scrubber_for(job, definition)
        error_class = f"{type(error).__module__}.{type(error).__qualname__}"
        if reason == "timeout":
            error_class = "litejobs.Timeout"
        message = str(error)
        steps = getattr(ctx, "step", None)
        if state == "dead" and steps is not None and steps.has_compensations:
            # Failed for good: undo the completed steps, last first (never on a retry).
            failures = steps.compensate()
            if failures:
                message += " | compensations failed: " + "; ".join(failures)
        # Scrubbed as a whole, after everything is appended, before it is cut to length.
        message = scrub(message)[:MESSAGE_LIMIT]
        trace = scrub("".join(traceback.format_exception(error)))[-TRACEBACK_LIMIT:]
        discard = state == "dead" and definition is not None and not definition.dead_letter
        if discard:
            logger.error(
                "job dropped id=%s name=%s attempt=%s error=%s (dead_letter=False)",
                job.id,
                job.name,
                job.attempt,
                error_class,
            )
        written = worker.write_with_retry(
            lambda cursor: (
                transitions.discard(cursor, job)
                if discard
                else transitions.fail(
                    cursor,
                    job,
                    owner=worker.id,
                    now=now,
                    state=state,
                    run_at=run_at,
                    outcome=outcome,
                    error_class=error_class,
                    error_message=message,
                    error_traceback=trace,
                )
            )
        )
        worker.finished(job, state if written else "refused", started, error=error_class)

    def _hand_back(self, job: ClaimedJob, error: UnknownJob, started: float) -> None:
        """This code cannot run the job (a newer release enqueued it): hand it back uncounted
        for a worker that can; once ``UNKNOWN_JOB_GRACE`` has passed since the first hand-back,
        dead-letter it with the reason instead."""
        worker = self.worker
        grace = settings.duration("UNKNOWN_JOB_GRACE")
        error_class = f"litejobs.{type(error).__name__}"
        message = f"Waiting for a worker that can run it: {error.args[0]}"
        handed_back = worker.write_with_retry(
            lambda cursor: transitions.hand_back(
                cursor,
                job,
                now=clock.now(),
                grace=grace,
                error_class=error_class,
                error_message=message[:MESSAGE_LIMIT],
            )
        )
        if handed_back:
            logger.warning(
                "job handed back id=%s name=%s version=%s code=%s: no declaration here can run "
                "it; a worker that can will take it",
                job.id,
                job.name,
                job.version,
                error.code,
            )
            worker.finished(job, "handed_back", started)
            return
        spent = type(error)(
            f"{error.args[0]} No worker that can run it took it within UNKNOWN_JOB_GRACE "
            f"({grace}) of its first hand-back."
        )
        self._write_failure(job, None, None, spent, started, give_up=True)

    def _suspend(self, job, signal: Suspended | OperatorNeeded, started) -> None:
        """The body sleeps, waits for an event, or waits for an operator: hand the job back."""
        worker = self.worker

        def write(cursor) -> bool:
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
            with transaction.atomic(using=worker.alias):
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

        written = worker.write_with_retry(write)
        outcome = "held" if isinstance(signal, OperatorNeeded) else "waiting"
        worker.finished(job, outcome if written else "refused", started)

    # Timeout support -----------------------------------------------------------------------

    def cancel_query_of(self, job: ClaimedJob) -> None:
        """Cancel the SQL statement this thread runs, if it still runs ``job``."""
        with self.current_lock:
            if self.current is job and self._pg_conn is not None:
                try:
                    self._pg_conn.cancel_safe(timeout=2.0)
                except Exception:
                    logger.debug("could not cancel the query of job %s", job.id, exc_info=True)


def scrubber_for(job: ClaimedJob, definition=None) -> Scrubber:
    """What blanks the job's sensitive values out of its error texts and log lines. A job no
    installed app declares could hold anything: all its payload values are blanked."""
    if definition is None:
        try:
            definition = catalog.get(job.name)
        except UnknownJob:
            return Scrubber(job.payload, job.payload if isinstance(job.payload, dict) else ())
    return Scrubber(job.payload, definition.sensitive)


def _result_json(job: ClaimedJob, result: Any) -> str | None:
    if result is None:
        return None
    try:
        return dumps(result)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"Job {job.name!r} returned a {type(result).__name__}, which is not JSON. Return "
            "plain JSON values (or nothing)."
        ) from error
