"""``OutboxRelay``: publish committed outbox messages to their subscribers and webhooks.

Any number of relays run (one in each ``runworker`` process unless ``--no-relay``, and any
``manage.py runrelay``); one lease row elects the one that publishes. Each batch is ONE
transaction on the litejobs database:

1. take or renew the lease (``relay_lead``: a new fence whenever the leader changes; the row
   stays locked until COMMIT, so no other relay can take over mid-batch);
2. claim the next ``OUTBOX_BATCH`` committed pending messages in id order and mark them
   published under that fence (``outbox_publish``, one statement);
3. one ``enqueue_many`` per subscriber of the batch's topics (jobs keyed
   ``outbox:<message id>``), then what the ``publishers`` features registered create for the
   batch (webhooks: one statement creating the delivery records and one ``enqueue_many`` of
   delivery jobs, ``litejobs.webhooks.delivery``);
4. COMMIT.

A relay killed anywhere before COMMIT leaves the whole batch pending and created nothing, so
the next leader publishes each message once; the job keys would deduplicate anyway. Messages
are published in id order by one relay at a time, and ``stage()`` serialises messages of one
key, so messages of a key are published in the order they were staged.

An idle relay sleeps on ``LISTEN litejobs_outbox`` (a commit that staged messages wakes it) and
polls every ``RELAY_POLL_INTERVAL`` as a backstop; a relay that is not the leader ignores
wake-ups until the leader's lease would have lapsed. A database outage is ridden out like the
worker does. A message whose topic this process does not declare (code older than the
stager's) is not skipped: the relay publishes what precedes it, then steps aside so a relay
running newer code can take over, and ``doctor`` reports the backlog.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.db import connections, transaction

from ..conf import settings
from ..core import clock
from ..core.registry import Registry
from ..exceptions import InvalidInput
from ..models import LeaderLease, LeaderRole, OutboxMessage
from ..models.outbox import OUTBOX_CHANNEL
from ..runtime import leadership
from ..runtime.listening import Listener
from ..runtime.outage import Outage, is_outage
from ..runtime.startup import describe_database
from ..runtime.stopping import GracefulStop
from ..sql.cursors import fetch_all, hot_cursor, run_query
from .declarations import subscribers_of
from .staging import StagedRow
from .topics import is_declared

logger = logging.getLogger(__name__)

#: The loop never blocks longer than this, so a stop is seen promptly.
TICK = 0.5
#: A batch that keeps failing (not an outage) is logged at most this often (seconds).
ERROR_LOG_INTERVAL = 60.0


#: Name -> ``publish(messages, now)``: what else a published batch creates besides its
#: subscribers' jobs (webhook deliveries), in the batch's transaction; answers how many.
publishers: Registry[Callable[[list[StagedRow], datetime], int]] = Registry(
    "outbox publisher", origin=None
)


@dataclass
class BatchReport:
    """What one batch published: messages, subscriber jobs and deliveries."""

    limit: int
    messages: int = 0
    jobs: int = 0
    deliveries: int = 0
    fence: int | None = None


class _NotLeader(Exception):
    """Another relay holds the lease."""


class _UnknownTopic(Exception):
    """The batch reached a message whose topic this process does not declare."""

    def __init__(self, index: int, message: StagedRow) -> None:
        super().__init__(message.topic)
        self.index = index
        self.message = message


class OutboxRelay:
    """Publishes the outbox while it holds the lease. ``run()`` blocks until stopped and
    answers an exit code; ``publish_pending()`` is one pass (tests and ``--once`` use it)."""

    def __init__(
        self,
        *,
        batch_size: int | None = None,
        once: bool = False,
        install_signals: bool = True,
        stop_event: threading.Event | None = None,
        name: str = "relay",
    ) -> None:
        self.id = uuid.uuid4().hex
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.alias = settings.DATABASE
        self.batch_size = int(batch_size or settings.OUTBOX_BATCH)
        if not 1 <= self.batch_size <= 10_000:
            raise InvalidInput(
                f"The relay batch (LITEJOBS['OUTBOX_BATCH']) must be 1-10000; got "
                f"{self.batch_size}.",
                code="settings-invalid",
            )
        self.lease = settings.duration("RELAY_LEASE")
        self.poll = settings.duration("RELAY_POLL_INTERVAL").total_seconds()
        self.once = once
        self.install_signals = install_signals
        self.stop_event = stop_event or threading.Event()
        self.outage = Outage(f"{name} {self.host}:{self.pid}")
        self.fence: int | None = None
        self.counts = {"messages": 0, "jobs": 0, "deliveries": 0, "batches": 0}
        self._listener = Listener(self.alias, OUTBOX_CHANNEL)
        #: Monotonic time before which another relay's lease holds (wake-ups are its business).
        self._retry_at: float | None = None
        #: After a failed batch, publish one message per transaction to pass up to the culprit.
        self._careful = False
        self._failures = 0
        self._last_error_log = -ERROR_LOG_INTERVAL

    # The loop ------------------------------------------------------------------------------

    def run(self) -> int:
        """Publish until SIGTERM/SIGINT (or, with ``once``, until nothing is pending)."""
        if self.install_signals:
            GracefulStop(self.stop_event, logger, f"relay id={self.id}").install()
        logger.info(
            "relay start id=%s host=%s pid=%s batch=%s database=%s",
            self.id,
            self.host,
            self.pid,
            self.batch_size,
            describe_database(self.alias),
        )
        try:
            if self.once:
                self._run_once()
            else:
                self._loop()
        finally:
            self.resign()
            self._listener.close()
            connections[self.alias].close()
        logger.info("relay stop id=%s counts=%s", self.id, self.counts)
        return 0

    def request_stop(self) -> None:
        """Begin a graceful stop: the batch in progress commits, then the lease is handed on."""
        self.stop_event.set()

    def _run_once(self) -> None:
        while not self.stop_event.is_set():
            try:
                self.publish_pending()
            except Exception as error:
                if not is_outage(error):
                    raise
                self.outage.wait_out(error, connections[self.alias], self.stop_event)
                continue
            return

    def _loop(self) -> None:
        next_poll = 0.0  # look at once: messages may have been staged while no relay ran
        woken = False
        while not self.stop_event.is_set():
            try:
                if self._listener.ensure():
                    next_poll = 0.0  # (re)connected: notifications may have been missed
                now = time.monotonic()
                retry_due = self._retry_at is not None and now >= self._retry_at
                if retry_due:
                    self._retry_at = None  # a failed batch or another leader: look again now
                if woken and self._retry_at is None:
                    self.publish_pending()
                elif retry_due or now >= next_poll:
                    if self._pending():
                        self.publish_pending()
                    next_poll = time.monotonic() + self.poll
                self.outage.succeeded()
                wake_at = next_poll if self._retry_at is None else min(next_poll, self._retry_at)
                woken = bool(self._listener.wait(min(TICK, max(wake_at - time.monotonic(), 0.0))))
            except Exception as error:
                if not is_outage(error):
                    raise
                self.fence = None
                self._listener.close()
                woken = False
                self.outage.wait_out(error, connections[self.alias], self.stop_event)

    def _pending(self) -> bool:
        """Whether any message waits (one read of the pending index)."""
        return OutboxMessage.objects.using(self.alias).filter(published_at__isnull=True).exists()

    # Publishing ----------------------------------------------------------------------------

    def publish_pending(self) -> int:
        """Publish batches until nothing is pending, another relay leads, or a stop was asked;
        answers the messages published."""
        total = 0
        while not self.stop_event.is_set():
            report = self.publish_batch()
            if report is None:
                break
            total += report.messages
            if report.messages < report.limit:
                if report.messages == 0:
                    self._careful = False  # everything before the culprit is out
                break
        return total

    def publish_batch(self, limit: int | None = None) -> BatchReport | None:
        """One transaction: lead, claim up to ``limit`` messages, create their jobs, commit.

        Answers ``None`` when this relay may not publish now (another leads, an unknown topic,
        or the batch failed and was rolled back — logged, retried after a backoff).
        """
        limit = limit or (1 if self._careful else self.batch_size)
        try:
            report = self._publish(limit)
        except _NotLeader:
            self._follow()
            return None
        except _UnknownTopic as stop:
            if stop.index > 0:
                return self.publish_batch(limit=stop.index)
            self._step_aside(stop.message)
            return None
        except Exception as error:
            if is_outage(error):
                raise
            self._batch_failed(error)
            return None
        self._failures = 0
        self._retry_at = None
        if report.fence != self.fence:
            logger.info("relay leads id=%s fence=%s", self.id, report.fence)
            self.fence = report.fence
        if report.messages:
            self.counts["messages"] += report.messages
            self.counts["jobs"] += report.jobs
            self.counts["deliveries"] += report.deliveries
            self.counts["batches"] += 1
            logger.debug(
                "relay published messages=%s jobs=%s deliveries=%s fence=%s",
                report.messages,
                report.jobs,
                report.deliveries,
                report.fence,
            )
        return report

    def _publish(self, limit: int) -> BatchReport:
        now = clock.now()
        connection = connections[self.alias]
        with transaction.atomic(using=self.alias):
            with hot_cursor(connection) as cursor:
                fence = leadership.lead(
                    cursor,
                    LeaderRole.RELAY,
                    owner=self.id,
                    host=self.host,
                    pid=self.pid,
                    lease=self.lease,
                )
                if fence is None:
                    raise _NotLeader
                report = BatchReport(limit=limit, fence=fence)
                run_query(
                    cursor, "outbox_publish", {"now": now, "fence": report.fence, "limit": limit}
                )
                messages = sorted((StagedRow(**r) for r in fetch_all(cursor)), key=_by_id)
            for index, message in enumerate(messages):
                if not is_declared(message.topic):
                    raise _UnknownTopic(index, message)
            report.messages = len(messages)
            if messages:
                report.jobs = self._subscribers(messages, now)
                report.deliveries = sum(publish(messages, now) for publish in publishers.values())
        return report

    def _subscribers(self, messages: list[StagedRow], now: datetime) -> int:
        by_topic: dict[str, list[StagedRow]] = defaultdict(list)
        for message in messages:
            by_topic[message.topic].append(message)
        created = 0
        for topic, group in by_topic.items():
            for definition in subscribers_of(topic):
                created += definition.publish(group, now)
        return created

    # Leadership ----------------------------------------------------------------------------

    def _follow(self) -> None:
        """Another relay leads: leave wake-ups to it until its lease would lapse."""
        if self.fence is not None:
            logger.warning("relay lost the lease id=%s", self.id)
        self.fence = None
        lease = LeaderLease.of(LeaderRole.RELAY, self.alias)
        now = clock.database_now(self.alias)  # the lease runs on the database's clock
        wait = (lease.expires_at - now).total_seconds() if lease else 0.0
        self._retry_at = time.monotonic() + min(max(wait, 0.0) + 0.05, self.poll)

    def _step_aside(self, message: StagedRow) -> None:
        """A message of a topic this code does not declare: let a newer relay publish it."""
        self._log_error(
            f"relay cannot publish outbox message {message.id}: this process declares no topic "
            f"{message.topic!r} (deploy the code that declares it to every relay, or declare "
            "it again); stepping aside so another relay can take over"
        )
        self.resign()
        self._retry_at = time.monotonic() + max(self.lease.total_seconds(), 1.0)

    def _batch_failed(self, error: Exception) -> None:
        self._failures += 1
        self._careful = True
        self._log_error(
            f"relay batch failed and was rolled back ({type(error).__name__}: "
            f"{str(error).splitlines()[0] if str(error) else ''}); retrying one message at a "
            "time",
            error,
        )
        backoff = min(0.25 * 2 ** min(self._failures - 1, 20), self.poll)
        self._retry_at = time.monotonic() + backoff

    def _log_error(self, text: str, error: Exception | None = None) -> None:
        now = time.monotonic()
        if now - self._last_error_log < ERROR_LOG_INTERVAL:
            return
        self._last_error_log = now
        logger.error(text, exc_info=error)

    def resign(self) -> None:
        """Hand the lease on at once (a clean stop); during an outage it just lapses."""
        if self.fence is not None:
            leadership.resign(self.alias, LeaderRole.RELAY, owner=self.id, logger=logger)
        self.fence = None


def _by_id(message: StagedRow) -> int:
    return message.id


class RelayThread(threading.Thread):
    """The relay inside ``runworker``: shares the worker's stop, restarts after a bug."""

    RESTART_AFTER = 5.0

    def __init__(self, stop_event: threading.Event) -> None:
        super().__init__(name="litejobs-relay", daemon=True)
        self.stop_event = stop_event

    def run(self) -> None:
        while not self.stop_event.is_set():
            try:
                OutboxRelay(install_signals=False, stop_event=self.stop_event).run()
            except Exception:
                logger.exception(
                    "relay thread error; restarting in %ss (jobs keep running)",
                    self.RESTART_AFTER,
                )
                self.stop_event.wait(self.RESTART_AFTER)
            finally:
                connections.close_all()
