"""The keys litejobs gives the jobs it enqueues for its own records: one run per record, and
the link from the job back to it (``origins`` reads it back). Plain functions that import
nothing, so the outbox's declarations import them before Django's apps are ready (the bench's
floor process does)."""

from __future__ import annotations

__all__ = ["subscriber_key"]


def subscriber_key(message_id: int) -> str:
    """The key of a subscriber's job for an outbox message (the relay's SQL writes the same,
    ``'outbox:' || message.id``)."""
    return f"outbox:{message_id}"
