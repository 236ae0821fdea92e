"""A worker thread: take a claimed job, run its body, hand how the run ended to the settler.

A runner knows its worker process only through the ``Crew`` it shares with the other
runners: the dispatcher it takes jobs from, the claimer it claims for all with when the buffer
is empty, the holdings it marks a run started in, the settler it hands each ending to. It
writes one thing itself — an atomic job's fenced completion, inside the body's transaction,
so the body's writes and ``done`` commit together — and hands every other ending
(``litejobs.worker.outcome``) to the settler.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from psycopg.pq import TransactionStatus

from ..core import clock, otel
from ..core.enums import CLAIM_GONE, CancelReason
from ..core.payloads import dumps
from ..core.tracing import use_traceparent
from ..exceptions import Cancelled, PayloadTooNew, ResultNotJson, StaleFence, UnknownJob
from ..jobs import catalog, transitions
from ..jobs.claims import ClaimedJob
from ..jobs.context import JobContext
from ..jobs.steps import OperatorNeeded, Steps, Suspended
from ..runtime.outage import is_outage
from ..sql.cursors import joining_cursor
from .claiming import Claimer
from .dispatch import Dispatcher
from .holdings import Holdings
from .joblines import JobLines, job_fields
from .outcome import (
    Completed,
    Crashed,
    Ending,
    HandBack,
    Pause,
    Refused,
    Release,
    Unfenced,
    failed,
    scrubber_for,
)
from .settling import Settler

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Crew:
    """What the runners of one worker share with it."""

    #: The database alias jobs run on (their atomic bodies, their completions).
    alias: str
    #: Where a runner takes its next job from.
    dispatcher: Dispatcher
    #: What claims jobs on the calling runner's connection and holds them (the dispatcher
    #: calls its ``claim``, for every runner, when its buffer is empty).
    claimer: Claimer
    #: The held jobs: a run's start and its progress are marked there.
    holdings: Holdings
    #: Where every ending goes.
    settler: Settler
    #: Where a run's ``job start`` line goes.
    lines: JobLines


class Runner(threading.Thread):
    """One of ``--concurrency`` threads, each with its own database connection."""

    def __init__(self, crew: Crew, number: int) -> None:
        super().__init__(name=f"litejobs-runner-{number}", daemon=True)
        self.crew = crew
        self.settler = crew.settler
        self.retired = False  # set when its job was abandoned: exit after it returns
        self.current: ClaimedJob | None = None
        self.current_lock = threading.Lock()
        self._pg_conn = None
        #: This thread's connection wrapper, while it runs a job.
        self._connection: BaseDatabaseWrapper | None = None

    # The thread --------------------------------------------------------------------------

    def run(self) -> None:
        claim = self.crew.claimer.claim
        try:
            while not self.retired:
                job = self.crew.dispatcher.next(claim)
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
                    self.settler.settle(job, Crashed(), time.monotonic())
                finally:
                    self.crew.dispatcher.done_with_one()
        finally:
            connections.close_all()

    # One job -----------------------------------------------------------------------------

    def execute(self, job: ClaimedJob) -> None:
        """Run one held job to an ending, handed to the settler."""
        started = time.monotonic()
        if job.cut_off:  # its lease went unrenewed while it waited in the buffer
            self.settler.settle(job, Release("lease not renewed"), started)
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
            self.settler.settle(job, HandBack(error), started)
            return
        ctx = JobContext(
            job_id=job.id,
            name=job.name,
            attempt=job.attempt,
            max_attempts=job.max_attempts,
            tenant=job.tenant,
            queue=job.queue,
            key=job.key,
            progress_sink=self._progress,
            occurrence=run.occurrence,
        )
        ctx.step = Steps(
            job=job,
            atomic=definition.atomic,
            alias=self.crew.alias,
            sensitive=catalog.sensitive_of(definition, job.payload),
        )
        if job.lost:  # its lease lapsed while it waited in the buffer
            self.settler.settle(job, Refused(), started)
            return
        if job.cancel_requested:  # an operator cancelled it before it started
            ctx.cancel(CancelReason.CANCEL)
            ending: Ending = failed(
                job, definition, Cancelled("cancel"), cancel_reason=ctx.cancel_reason
            )
            self.settler.settle(job, ending, started)
            return
        with self.current_lock:
            self.current = job
            self._pg_conn = None
            self._connection = connections[self.crew.alias]
        timeout = definition.timeout.total_seconds()
        self.crew.holdings.start(job, ctx, timeout, self)
        self.crew.lines.info(
            logger,
            "job start id=%s name=%s attempt=%s/%s queue=%s",
            job.id,
            job.name,
            job.attempt,
            job.max_attempts,
            job.queue,
            extra=job_fields(job),
        )
        try:
            with use_traceparent(job.traceparent), otel.consumer(job):
                deadline = _Deadline(ctx, timeout)
                if definition.atomic:
                    ending = self._run_atomic(job, definition, ctx, deadline)
                else:
                    ending = self._run_unfenced(job, definition, ctx, deadline)
        except BaseException as error:
            ending = self._ending_of(job, definition, ctx, error, started)
        finally:
            with self.current_lock:
                self.current = None
                self._pg_conn = None
                self._connection = None
        self.settler.settle(job, ending, started)

    def _run_atomic(
        self, job: ClaimedJob, definition: catalog.Definition, ctx: JobContext, deadline: _Deadline
    ) -> Ending:
        alias = self.crew.alias
        connection = connections[alias]
        with transaction.atomic(using=alias):
            # A timeout may cancel the statement the body runs, never the failure write after.
            with self.current_lock:
                self._pg_conn = connection.connection
            try:
                result = definition.invoke(ctx, job.payload, job.version)
                result_json = _result_json(job, result)
                _check_claim(job, ctx, deadline)
                if _wrote_nothing(connection):
                    # Nothing to commit with the completion: it joins the next batched
                    # acknowledgement, as an atomic=False job's does.
                    return Unfenced(result_json)
                written = _complete(connection, job, result_json)
                if not written:
                    raise StaleFence(
                        f"completion of job {job.id} with fence {job.fence} refused: "
                        "another claim owns it; the body's writes are rolled back"
                    )
            finally:
                with self.current_lock:
                    self._pg_conn = None
        return Completed()

    def _run_unfenced(
        self, job: ClaimedJob, definition: catalog.Definition, ctx: JobContext, deadline: _Deadline
    ) -> Ending:
        result = definition.invoke(ctx, job.payload, job.version)
        result_json = _result_json(job, result)
        _check_claim(job, ctx, deadline)
        return Unfenced(result_json)

    def _ending_of(
        self,
        job: ClaimedJob,
        definition: catalog.Definition,
        ctx: JobContext,
        error: BaseException,
        started: float,
    ) -> Ending:
        """How a run that raised ``error`` ends."""
        reason = ctx.cancel_reason
        if isinstance(error, Suspended | OperatorNeeded) and reason is None:
            return Pause(error)
        if reason == CancelReason.LEASE_LOST and job.cut_off:
            # This worker could not renew the lease: nothing is written for the run, and the
            # job goes back uncounted unless another worker has taken it over meanwhile.
            return Release("lease not renewed")
        if isinstance(error, StaleFence) or reason in CLAIM_GONE:
            return Refused(reason or "stale-fence")
        if is_outage(error):
            return Release("database unavailable", error=error)
        if reason == CancelReason.DRAIN:
            return Release("interrupted by drain")
        if not isinstance(error, Exception) and not isinstance(error, Cancelled):
            # KeyboardInterrupt/SystemExit inside a body: hand the job back, then re-raise.
            self.settler.settle(job, Release(type(error).__name__), started)
            raise error
        return failed(job, definition, error, cancel_reason=reason, steps=ctx.step)

    def _progress(self, job_id: int, progress: dict[str, Any]) -> None:
        """The body reported progress (``ctx.progress``): the main loop saves it."""
        self.crew.holdings.set_progress(job_id, dumps(progress))

    # Timeout support -----------------------------------------------------------------------

    def cancel_query_of(self, job: ClaimedJob) -> None:
        """Cancel the SQL statement this thread runs, if it still runs ``job``."""
        with self.current_lock:
            if self.current is job and self._pg_conn is not None:
                try:
                    self._pg_conn.cancel_safe(timeout=2.0)
                except Exception:
                    logger.debug("could not cancel the query of job %s", job.id, exc_info=True)

    def end_session_of(self, job: ClaimedJob, end: Callable[[int], object]) -> None:
        """``end(pid)`` the database session of this thread if it still runs ``job``: an
        abandoned body may never return it. Its transaction rolls back, its locks go, and its
        next statement fails (its ending is refused all the same)."""
        with self.current_lock:  # the thread cannot move on to another job meanwhile
            wrapper = self._connection if self.current is job else None
            session = wrapper.connection if wrapper is not None else None
            if session is not None and not session.closed:
                end(session.info.backend_pid)


class _Deadline:
    """When a run's attempt times out (monotonic), as its runner sees it."""

    def __init__(self, ctx: JobContext, timeout: float) -> None:
        self.ctx = ctx
        self.timeout = timeout
        self.started = time.monotonic()

    def passed(self) -> bool:
        """Whether the attempt ran past its timeout: the main loop fired the cancellation for
        it, or it ended after the instant before the main loop's next look. Fires it then."""
        if self.ctx.cancel_reason is None and time.monotonic() - self.started > self.timeout:
            self.ctx.cancel(CancelReason.TIMEOUT)
        return self.ctx.cancel_reason == CancelReason.TIMEOUT


def _check_claim(job: ClaimedJob, ctx: JobContext, deadline: _Deadline) -> None:
    """Before a body's completion: refuse it when its claim is gone (another claim owns the
    job), and fail the attempt when it ran past its timeout — a late completion is refused as
    a lost lease's is, so an atomic body's writes roll back and the retry policy applies."""
    if ctx.cancel_reason in CLAIM_GONE:
        raise StaleFence(f"job {job.id} lost its claim before completing")
    if deadline.passed():
        raise TimeoutError(
            f"Job {job.name!r} #{job.id} ran {time.monotonic() - deadline.started:.1f}s, past "
            f"its timeout of {deadline.timeout:g}s: the attempt failed and its completion "
            "was refused."
        )


def _wrote_nothing(connection: BaseDatabaseWrapper) -> bool:
    """Whether an atomic body sent no statement and left nothing to run at its commit.

    Its transaction has not begun, so no write can commit with its completion; an
    ``on_commit`` callback it registered keeps the completion in the transaction, so the
    callback still runs only once the job is done.
    """
    idle = connection.connection.info.transaction_status == TransactionStatus.IDLE
    return idle and not connection.run_on_commit


def _complete(connection: BaseDatabaseWrapper, job: ClaimedJob, result_json: str | None) -> bool:
    """Write an atomic job's fenced completion in the transaction of its body (alone, as one
    autocommit statement, when the body sent nothing but registered an ``on_commit``)."""
    with joining_cursor(connection) as cursor:
        return transitions.complete(cursor, job, now=clock.now(), result_json=result_json)


def _result_json(job: ClaimedJob, result: Any) -> str | None:
    if result is None:
        return None
    try:
        return dumps(result)
    except (TypeError, ValueError) as error:
        raise ResultNotJson(
            f"Job {job.name!r} returned a {type(result).__name__}, which is not JSON. Return "
            "plain JSON values (or nothing)."
        ) from error
