"""``Worker``: one ``runworker`` process — threads that run jobs, and the main loop that keeps
their leases, wakes them on NOTIFY and at the next due time, enforces timeouts and drains on
SIGTERM. A lease watch cancels any run whose lease this worker could not renew in time."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from django.db import connections

from ..conf import settings
from ..core import clock
from ..core.enums import CancelReason
from ..core.payloads import dumps
from ..jobs import catalog, claims, leases, transitions
from ..jobs.claims import ClaimedJob
from ..jobs.context import JobContext
from ..models.jobs import NOTIFY_CHANNEL
from ..outbox.relay import RelayThread
from ..runtime.listening import Listener
from ..runtime.outage import Outage, is_outage
from ..runtime.startup import describe_database
from ..runtime.stopping import GracefulStop
from .claiming import Claimer
from .dispatch import Dispatcher
from .handbacks import HandedBack
from .holdings import Held, Holdings, LeaseWatch, RunnerHandle
from .joblines import JobLines
from .outcome import Release, failed
from .runner import Crew, Runner
from .settling import Settler

logger = logging.getLogger(__name__)

#: The main loop never blocks longer than this, so signals and timeouts are seen promptly.
TICK = 0.5
#: Forget Worker rows whose lease lapsed this long ago.
FORGET_WORKERS_AFTER = timedelta(hours=1)


class Worker:
    """Runs jobs from some queues until stopped. ``run()`` blocks and answers an exit code."""

    def __init__(
        self,
        *,
        queues: list[str] | None = None,
        concurrency: int = 4,
        once: bool = False,
        max_jobs: int | None = None,
        drain_timeout: float | None = None,
        claim_batch: int | None = None,
        install_signals: bool = True,
        relay: bool | None = None,
    ) -> None:
        self.id = uuid.uuid4().hex
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.queues = sorted(set(queues or []))
        self.concurrency = max(1, concurrency)
        self.once = once
        self.alias = settings.DATABASE
        self.drain_timeout = (
            drain_timeout
            if drain_timeout is not None
            else settings.duration("DRAIN_TIMEOUT").total_seconds()
        )
        self.lease = settings.duration("LEASE")
        self.heartbeat_every = settings.duration("HEARTBEAT").total_seconds()
        self.poll_max = settings.duration("POLL_INTERVAL").total_seconds()
        self.grace = settings.duration("TIMEOUT_GRACE").total_seconds()
        self.install_signals = install_signals
        # The outbox relay runs beside the jobs (not with --once, which exits when idle).
        self.relay = (settings.RELAY_IN_WORKER if relay is None else relay) and not once
        self._relay_thread: RelayThread | None = None
        self.started_at = clock.now()
        self.holdings = Holdings()
        self.dispatcher = Dispatcher(claim_batch or settings.CLAIM_BATCH, max_jobs)
        self.handed_back = HandedBack()
        self.outage = Outage(f"worker {self.host}:{self.pid}")
        self.stop_event = threading.Event()
        self.control = Listener(self.alias, NOTIFY_CHANNEL)
        self.lines = JobLines()
        self.settler = Settler(
            owner=self.id,
            alias=self.alias,
            holdings=self.holdings,
            dispatcher=self.dispatcher,
            handed_back=self.handed_back,
            outage=self.outage,
            stop_event=self.stop_event,
            lines=self.lines,
        )
        self.claimer = Claimer(
            owner=self.id,
            alias=self.alias,
            queues=self.queues,
            lease=self.lease,
            holdings=self.holdings,
            dispatcher=self.dispatcher,
            handed_back=self.handed_back,
            outage=self.outage,
            stop_event=self.stop_event,
        )
        self._crew = Crew(
            alias=self.alias,
            dispatcher=self.dispatcher,
            claimer=self.claimer,
            holdings=self.holdings,
            settler=self.settler,
            lines=self.lines,
        )
        self._runners: list[Runner] = []
        self._timers = _Timers.starting(self.poll_max)
        self._watch_stop = threading.Event()
        self._lease_watch = LeaseWatch(
            self.holdings,
            self.lease.total_seconds(),
            self._watch_stop,
            tick=min(TICK, self.lease.total_seconds() / 20),
            logger=logger,
        )

    @property
    def counts(self) -> dict[str, int]:
        """How many held jobs ended how (``RunOutcome``), so far."""
        return self.settler.counts

    def serves(self, queue: str) -> bool:
        return not self.queues or queue in self.queues

    # Claims ----------------------------------------------------------------------------------

    def _wake(self) -> datetime | None:
        """Due work: claim it at once on this thread for a waiting runner (or let a busy
        worker's runners claim it when they are free). Answers the instant a claim here looked
        for due jobs from (None when none ran here)."""
        claim = self.claimer.on_loop(self.control.cursor)
        self.dispatcher.claim_for_waiting(claim)
        if claim.limited_due:
            self.dispatcher.poke()
        return claim.looked_from

    # The main loop -------------------------------------------------------------------------

    def run(self) -> int:
        """Start the threads, serve until stopped, drain. Answers the process exit code."""
        if self.install_signals:
            GracefulStop(self.stop_event, logger, f"worker id={self.id}").install()
        logger.info(
            "worker start id=%s host=%s pid=%s queues=%s jobs=%s concurrency=%s database=%s",
            self.id,
            self.host,
            self.pid,
            ",".join(self.queues) or "*",
            len([d for d in catalog.all_jobs() if self.serves(d.queue)]),
            self.concurrency,
            describe_database(self.alias),
        )
        self.lines.start()
        self._lease_watch.start()
        for number in range(self.concurrency):
            self._start_runner(number)
        if self.relay:
            self._relay_thread = RelayThread(self.stop_event)
            self._relay_thread.start()
        try:
            self._serve()
        finally:
            self._drain()
            if self._relay_thread is not None:  # its batch in progress commits, then it stops
                self._relay_thread.join(self.drain_timeout + self.grace)
        logger.info("worker stop id=%s %s", self.id, self.settler.summary())
        return 0

    def request_stop(self) -> None:
        """Begin a graceful stop (what SIGTERM does)."""
        self.stop_event.set()

    def _start_runner(self, number: int) -> None:
        runner = Runner(self._crew, number)
        self._runners.append(runner)
        runner.start()

    def _serve(self) -> None:
        self._timers = _Timers.starting(self.poll_max)
        while not self.stop_event.is_set() and self._tick():
            pass

    def _tick(self) -> bool:
        """One turn of the main loop; answers whether to go on (False once nothing is left)."""
        try:
            self._look()
        except Exception as error:
            if not is_outage(error):
                raise
            self.control.close()
            # The lease watch cancels held runs meanwhile if the outage outlasts them.
            self.stop_event.wait(self.outage.failed(error))
            return True
        self._check_timeouts()
        self._backstop_poll()
        if self._done():
            return False
        self._check_runners()
        return True

    def _look(self) -> None:
        """The turn's database work: due claims (all of them after a reconnect), heartbeat,
        releases, progress; then wait for a notification or the next timer."""
        timers, now = self._timers, time.monotonic()
        if self.control.ensure() or timers.fresh:
            # (Re)connected: notifications may have been missed, so look now.
            timers.due = None
            self._ask_next_due()
            self.dispatcher.poke()
            timers.fresh = False
        elif timers.due is not None and timers.due <= clock.now():
            self._claim_due()
        if now >= timers.heartbeat:
            self._heartbeat()
            timers.beat(now, self.heartbeat_every)
        self._release_pending()
        if now >= timers.progress:
            self._save_progress()
            timers.progress = now + 1.0
        self.outage.succeeded()
        # --once looks often so it exits as soon as nothing is left.
        wait = timers.wait(now, TICK / 10 if self.once else TICK)
        for queue, run_at in map(_due_notice, self.control.wait(wait)):
            self._noticed(queue, run_at)

    def _backstop_poll(self) -> None:
        now = time.monotonic()
        if now >= self._timers.poll:
            self.dispatcher.poke()
            self._timers.polled(now, self.poll_max, busy=bool(len(self.holdings)))

    def _check_runners(self) -> None:
        for runner in list(self._runners):
            if not runner.is_alive() and not runner.retired:
                raise RuntimeError(f"{runner.name} stopped unexpectedly")

    def _done(self) -> bool:
        """Nothing held and nothing left to take: all that was due is done (``--once``), or
        ``--max-jobs`` jobs were claimed."""
        if self.once and self.dispatcher.idle() and not len(self.holdings):
            return True
        return self.dispatcher.exhausted and not len(self.holdings)

    def _claim_due(self) -> None:
        """Due now: claim, then learn the next due time (one statement per instant).

        The next due time is asked for after the instant the claim looked from, not after the
        claim returned: a job that fell due while the claim ran is then due at once, not
        forgotten until some later wake-up.
        """
        looked_from = self._wake()
        self._timers.due = None
        # When no claim ran here (the runners were busy), they claim what is due when free.
        self._ask_next_due(after=looked_from)

    def _ask_next_due(self, after: datetime | None = None) -> None:
        with self.control.cursor() as cursor:
            due = claims.next_due(cursor, queues=self.queues, now=after or clock.now())
        self._timers.due_at(due)

    def _noticed(self, queue: str, run_at: datetime | None) -> None:
        if not self.serves(queue):
            return
        if run_at is None or run_at <= clock.now():
            self._wake()
        else:
            self._timers.due_at(run_at)

    def _worker_row(self, stopping: bool = False) -> dict[str, Any]:
        return {
            "owner": self.id,
            "host": self.host[:255],
            "pid": self.pid,
            "queues_json": dumps(self.queues),
            "concurrency": self.concurrency,
            "started_at": self.started_at,
            "now": clock.now(),
            "lease": self.lease,
            "forget_after": FORGET_WORKERS_AFTER,
            "stopping": stopping,
        }

    def _heartbeat(self, stopping: bool = False) -> None:
        held = self.holdings.jobs()
        recovered = self.outage.recovered_at
        # After an outage, give every worker one lease to renew before reaping anyone's jobs.
        reap = recovered is None or time.monotonic() - recovered > self.lease.total_seconds()
        sent = time.monotonic()
        with self.control.cursor() as cursor:
            answer = leases.heartbeat(
                cursor,
                worker=self._worker_row(stopping),
                held=held,
                reap=reap,
                queues=self.queues,
            )
        self.holdings.renewed(answer.renewed, sent)
        if answer.reaped:
            logger.warning("reaped jobs of lost workers count=%s", answer.reaped)
        if answer.reaped or answer.due:
            self.dispatcher.poke()
        for job in held:
            if job.id not in answer.renewed:
                self._lost(job)
        for job_id in answer.cancel_requested:
            held_job = self.holdings.get(job_id)
            if held_job is None:
                continue
            if held_job.ctx is None:
                held_job.job.cancel_requested = True
            elif held_job.ctx.cancel(CancelReason.CANCEL):
                logger.info("job cancel requested id=%s", job_id)

    def _lost(self, job: ClaimedJob) -> None:
        held = self.holdings.drop(job.id)
        if held is None:
            return  # finished meanwhile
        logger.warning("job lease lost id=%s name=%s fence=%s", job.id, job.name, job.fence)
        if held.ctx is not None:
            held.ctx.cancel(CancelReason.LEASE_LOST)
            held.ctx.cancel_reason = CancelReason.LEASE_LOST
        else:
            job.lost = True

    def _release_pending(self) -> None:
        self.settler.release_pending(self.control.cursor)

    def _save_progress(self) -> None:
        updates = self.holdings.take_progress()
        if updates:
            with self.control.cursor() as cursor:
                transitions.save_progress(cursor, updates)

    def _check_timeouts(self) -> None:
        now = time.monotonic()
        for held in self.holdings.snapshot():
            if held.ctx is None or held.deadline is None or now < held.deadline:
                continue
            if held.abandon_at is None:
                held.abandon_at = now + self.grace
                if held.ctx.cancel(CancelReason.TIMEOUT):
                    logger.warning("job timeout id=%s name=%s", held.job.id, held.job.name)
                    cast(RunnerHandle, held.runner).cancel_query_of(held.job)  # set with ctx
            elif now >= held.abandon_at and held.ctx.cancel_reason == CancelReason.TIMEOUT:
                self._abandon(held)

    def _abandon(self, held: Held) -> None:
        """A timed-out body ignored its cancellation: end its database session (its
        transaction rolls back, its connection is given back), fail the attempt, and replace
        the thread."""
        # Only a started run times out: Holdings.start set its ctx and runner.
        job, runner = held.job, cast(RunnerHandle, held.runner)
        cast(JobContext, held.ctx).cancel_reason = CancelReason.ABANDONED
        logger.error(
            "job abandoned id=%s name=%s: its body ignored the timeout's cancellation; its "
            "database session is ended and its late completion will be refused",
            job.id,
            job.name,
        )
        runner.retired = True
        runner.end_session_of(job, self._end_session)
        ending = failed(
            job,
            catalog.run_of(job).definition,
            TimeoutError("abandoned after its timeout"),
            cancel_reason=CancelReason.TIMEOUT,
        )
        self.settler.settle(job, ending, held.started or time.monotonic())
        if not self.stop_event.is_set():
            self._start_runner(len(self._runners))

    def _end_session(self, pid: int) -> None:
        try:
            with self.control.cursor() as cursor:
                leases.end_session(cursor, pid)
        except Exception as error:
            if not is_outage(error):
                raise
            # The server is gone: so is the session.
            self.control.close()

    # Drain ---------------------------------------------------------------------------------

    def _drain(self) -> None:
        self.stop_event.set()
        self.claimer.rate_wake.cancel()
        unstarted = self.dispatcher.stop()
        for job in unstarted:
            self.settler.settle(job, Release("worker stopping before it started"), time.monotonic())
        deadline = time.monotonic() + self.drain_timeout
        self._serve_until_empty(deadline)
        if len(self.holdings):
            for held in self.holdings.snapshot():
                if held.ctx is not None and held.ctx.cancel(CancelReason.DRAIN):
                    cast(RunnerHandle, held.runner).cancel_query_of(held.job)  # set with ctx
            self._serve_until_empty(time.monotonic() + self.grace)
        for job in self.dispatcher.leftovers():
            self.settler.settle(job, Release("claimed while stopping"), time.monotonic())
        self.settler.stop()
        try:
            self._release_pending()
            with self.control.cursor() as cursor:
                leases.worker_stopped(cursor, self.id)
        except Exception as error:
            if not is_outage(error):
                raise
            logger.warning("worker stopped during an outage; its leases will lapse")
        for job in self.holdings.jobs():
            logger.warning("job abandoned at exit id=%s name=%s", job.id, job.name)
        self.lines.stop()
        self._watch_stop.set()
        self.control.close()
        connections.close_all()

    def _serve_until_empty(self, deadline: float) -> None:
        """While draining: keep leases and releases going until nothing is held."""
        next_heartbeat = 0.0
        while len(self.holdings) and time.monotonic() < deadline:
            try:
                self._release_pending()
                if time.monotonic() >= next_heartbeat:
                    self._heartbeat(stopping=True)
                    next_heartbeat = time.monotonic() + self.heartbeat_every
            except Exception as error:
                if not is_outage(error):
                    raise
                self.control.close()
                time.sleep(min(1.0, self.outage.failed(error)))
            self._check_timeouts()
            self.holdings.wait_empty(min(TICK, max(0.0, deadline - time.monotonic())))


@dataclass
class _Timers:
    """When the main loop next does what it does on time (monotonic seconds), and the earliest
    known future ``run_at``."""

    #: The backstop poll's interval: short right after work, doubling to ``POLL_INTERVAL``.
    poll_interval: float
    poll: float
    heartbeat: float = 0.0
    progress: float = 0.0
    #: The earliest known future run_at; when it passes the worker claims and asks again.
    due: datetime | None = None
    #: Not looked for due work yet (as after a reconnect).
    fresh: bool = True

    @classmethod
    def starting(cls, poll_max: float) -> _Timers:
        return cls(poll_interval=poll_max, poll=time.monotonic() + poll_max)

    def beat(self, now: float, every: float) -> None:
        """A heartbeat went out; it looked for due work too, so the backstop poll waits a
        full interval."""
        self.heartbeat = now + every
        self.poll = max(self.poll, now + self.poll_interval)

    def polled(self, now: float, poll_max: float, *, busy: bool) -> None:
        """Idle backoff: poll often right after work, then back off to ``POLL_INTERVAL``."""
        self.poll_interval = 1.0 if busy else min(self.poll_interval * 2, poll_max)
        self.poll = now + self.poll_interval

    def due_at(self, run_at: datetime | None) -> None:
        """A job is due at ``run_at``: keep the earliest."""
        if run_at is not None and (self.due is None or run_at < self.due):
            self.due = run_at

    def wait(self, now: float, tick: float) -> float:
        """How long the loop may wait for a notification (seconds, at most ``tick``)."""
        wait = min(tick, self.poll - now, self.heartbeat - now)
        if self.due is not None:
            wait = min(wait, (self.due - clock.now()).total_seconds())
        return max(wait, 0.0)


def _due_notice(payload: str) -> tuple[str, datetime | None]:
    """A jobs-channel notification: ``"<queue> <epoch>"`` (a job due at that instant) or
    ``"<queue>"`` (due now)."""
    queue, _, epoch = payload.rpartition(" ")
    if not queue:
        return payload, None
    try:
        return queue, datetime.fromtimestamp(float(epoch), tz=UTC)
    except ValueError:
        return payload, None
