"""The outbox's operator side: its backlog, its retention, and what ``doctor`` finds."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connections, transaction

from ..conf import settings
from ..core import clock
from ..core.diagnostics import Problem
from ..core.durations import format_age
from ..core.enums import LeaderRole
from ..core.registry import Registry
from ..exceptions import InvalidInput
from ..models import LeaderLease, OutboxMessage
from ..sql.cursors import run_query

logger = logging.getLogger(__name__)

#: What else ``OUTBOX_RETENTION`` removes besides published messages, by name: the name of the
#: statement deleting one bounded batch (``before``, ``limit``), such as finished webhook
#: deliveries.
retained: Registry[str] = Registry("outbox retention", origin=None)


@dataclass(frozen=True)
class Backlog:
    """Messages the relay has not published yet, and how long the oldest has waited."""

    pending: int
    oldest_id: int | None
    oldest_age: timedelta | None
    oldest_topic: str = ""


def backlog(*, now: datetime | None = None) -> Backlog:
    """The outbox's pending messages (``doctor``, metrics and the admin read this)."""
    now = now or clock.now()
    pending = OutboxMessage.objects.using(settings.DATABASE).filter(published_at__isnull=True)
    oldest = pending.order_by("id").values_list("id", "created_at", "topic").first()
    if oldest is None:
        return Backlog(0, None, None)
    return Backlog(pending.count(), oldest[0], max(now - oldest[1], timedelta(0)), oldest[2])


def purge(
    *,
    now: datetime | None = None,
    by: str = "system",
    should_stop: Callable[[], bool] | None = None,
) -> dict[str, int]:
    """Delete published messages, and what features registered in ``retained`` (finished
    webhook deliveries), older than ``OUTBOX_RETENTION``, ``PURGE_BATCH`` rows per statement;
    answers the counts by name (``messages``, ``deliveries``).

    Pending messages and deliveries still being retried are never deleted.
    """
    now = now or clock.now()
    before = now - settings.duration("OUTBOX_RETENTION")
    limit = int(settings.PURGE_BATCH)
    if limit < 1:
        raise InvalidInput(
            f"LITEJOBS['PURGE_BATCH'] must be 1 or more; got {limit}.", code="settings-invalid"
        )
    alias = settings.DATABASE
    counts = {}
    for what, statement in {"messages": "outbox_purge", **retained}.items():
        deleted = 0
        while not (should_stop and should_stop()):
            with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
                run_query(cursor, statement, {"before": before, "limit": limit})
                batch = cursor.rowcount
            deleted += batch
            if batch < limit:
                break
        counts[what] = deleted
    logger.info("outbox purged by=%s %s", by, " ".join(f"{what}={n}" for what, n in counts.items()))
    return counts


def problems(*, now: datetime, max_age: timedelta) -> list[Problem]:
    """What ``doctor`` reports about the outbox: ``outbox-backlog`` when the oldest pending
    message waited longer than ``max_age`` (no relay runs, the relay is stuck on a message,
    or it cannot keep up)."""
    found: list[Problem] = []
    waiting = backlog(now=now)
    if waiting.oldest_age is not None and waiting.oldest_age > max_age:
        lease = LeaderLease.of(LeaderRole.RELAY, settings.DATABASE)
        leader = (
            f"the relay lease was last renewed at {lease.renewed_at.isoformat()} by "
            f"{lease.host}:{lease.pid}"
            if lease is not None
            else "no relay has ever published"
        )
        found.append(
            Problem(
                "outbox-backlog",
                f"{waiting.pending} outbox message(s) wait to be published; the oldest "
                f"(id {waiting.oldest_id}, topic {waiting.oldest_topic!r}) for "
                f"{format_age(waiting.oldest_age)}, over the {format_age(max_age)} "
                f"threshold; {leader}. Check that a `manage.py runworker` (without "
                "--no-relay) or `manage.py runrelay` runs, and look in the litejobs.outbox.relay "
                "log for a message it cannot publish (a topic its code does not declare).",
                count=waiting.pending,
            )
        )
    return found
