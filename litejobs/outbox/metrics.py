"""The outbox's metric families (``Feature.metrics``; the metrics add-on serves them):
``litejobs_outbox_pending`` and ``litejobs_outbox_oldest_pending_age_seconds``, messages the
relay has not published yet — alert when the age grows."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from ..core.features import Family
from . import operations


def families(now: datetime) -> Iterator[Family]:
    """The outbox backlog."""
    waiting = operations.backlog(now=now)
    yield Family(
        "litejobs_outbox_pending",
        "Outbox messages the relay has not published yet.",
        samples=[((), waiting.pending)],
    )
    yield Family(
        "litejobs_outbox_oldest_pending_age_seconds",
        "How long the oldest unpublished outbox message has waited (0: none).",
        samples=[((), waiting.oldest_age.total_seconds() if waiting.oldest_age else 0.0)],
    )
