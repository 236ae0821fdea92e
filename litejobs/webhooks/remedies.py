"""The dashboard's words and actions for webhooks' problems (``Feature.words``), each with
a link to the endpoint."""

from __future__ import annotations

from ..core.remedies import Words, linked


def _endpoint(says: str) -> Words:
    return linked(says, "Open the endpoint", "view_webhookendpoint", "webhookendpoint_change")


#: The dashboard's words for each code of the webhooks' problems.
WORDS: dict[str, Words] = {
    "webhook-disabled": _endpoint(
        "Webhook endpoint {where} was disabled after failing again and again: its events are "
        "not delivered. Enable it on its page once the receiver works."
    ),
    "webhook-endpoint-disabled": _endpoint(
        "Webhook endpoint {where} is disabled by an operator: its events are not delivered "
        "until it is enabled on its page."
    ),
}
