"""The demo's outbox: ``place_order`` stages ``orders.paid``; the warehouse subscriber and the
partner's webhook receiver (a view verifying the signature) get it."""

from __future__ import annotations

import json

import pytest
from django.conf import settings as django_settings
from django.urls import reverse

from litejobs.models import Job, JobState, OutboxMessage, WebhookDelivery
from litejobs.outbox.relay import OutboxRelay
from litejobs.webhooks import DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, sign
from litejobs.webhooks.delivery import deliver
from project.orders.jobs import ask_warehouse_to_ship
from project.orders.services import place_order
from project.partners.endpoint import ensure_endpoint
from project.partners.models import ReceivedWebhook

RECEIVER = reverse("partner-webhooks")


def signed_post(
    client,
    clock,
    body: dict,
    *,
    delivery="1",
    secret=None,
    at=None,
    raw=None,
    sent_delivery=None,
    sent_event=None,
):
    """POST ``body`` signed as litejobs signs it; ``raw``, ``sent_delivery`` and ``sent_event``
    replace what is sent after signing (a tampered or replayed request)."""
    raw = raw if raw is not None else json.dumps(body).encode()
    stamp = int((at or clock.now()).timestamp())
    header = sign(
        secret or django_settings.DEMO_WEBHOOK_SECRET,
        json.dumps(body).encode(),
        stamp,
        delivery=delivery,
        event=body["topic"],
    )
    return client.post(
        RECEIVER,
        data=raw,
        content_type="application/json",
        headers={
            SIGNATURE_HEADER: header,
            DELIVERY_HEADER: sent_delivery or delivery,
            EVENT_HEADER: sent_event or body["topic"],
        },
    )


EVENT = {"id": 7, "topic": "orders.paid", "key": "order:3", "created_at": "x", "data": {"a": 1}}


@pytest.mark.django_db
def test_the_partner_stores_a_verified_delivery_once(client, clock):
    first = signed_post(client, clock, EVENT)
    assert (first.status_code, first.content) == (200, b"stored")
    again = signed_post(client, clock, EVENT)  # a retried delivery
    assert (again.status_code, again.content) == (200, b"duplicate")
    row = ReceivedWebhook.objects.get()
    assert (row.delivery, row.event_id, row.topic, row.data) == ("1", 7, "orders.paid", {"a": 1})
    assert row.signed_at == clock.now().replace(microsecond=0)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("tamper", "code"),
    [
        ({"raw": json.dumps({**EVENT, "data": {"a": 2}}).encode()}, "webhook-signature-mismatch"),
        ({"secret": "whsec_somebody_else_entirely"}, "webhook-signature-mismatch"),
        ({"at": "expired"}, "webhook-signature-expired"),
        # A captured delivery replayed under a new delivery id, or relabelled with a topic.
        ({"sent_delivery": "2"}, "webhook-signature-mismatch"),
        ({"sent_event": "orders.refunded"}, "webhook-signature-mismatch"),
    ],
)
def test_the_partner_refuses_what_does_not_verify(client, clock, tamper, code):
    if tamper.get("at") == "expired":
        tamper = {"at": clock.now().replace(year=2025)}
    response = signed_post(client, clock, EVENT, **tamper)
    assert response.status_code == 400
    assert response.json() == {"error": code}
    assert not ReceivedWebhook.objects.exists()


@pytest.mark.django_db
@pytest.mark.django_db
def test_a_replay_under_a_new_delivery_id_is_not_stored_twice(client, clock):
    assert signed_post(client, clock, EVENT).content == b"stored"
    replay = signed_post(client, clock, EVENT, sent_delivery="999")  # inside the window
    assert (replay.status_code, replay.json()) == (400, {"error": "webhook-signature-mismatch"})
    assert list(ReceivedWebhook.objects.values_list("delivery", flat=True)) == ["1"]


@pytest.mark.django_db
def test_an_unsigned_request_is_refused(client):
    response = client.post(RECEIVER, data=b"{}", content_type="application/json")
    assert (response.status_code, response.json()) == (400, {"error": "webhook-signature-missing"})


@pytest.mark.django_db
def test_placing_an_order_stages_orders_paid_with_it(clock):
    order = place_order("ada@example.com", total="12.50")
    message = OutboxMessage.objects.get()
    assert (message.topic, message.key) == ("orders.paid", f"order:{order.pk}")
    assert message.payload == {"order_id": order.pk, "total": "12.50", "currency": "EUR"}


@pytest.mark.django_db(transaction=True)
def test_a_paid_order_reaches_the_warehouse_and_the_partner(
    clock, run_worker, live_server, settings
):
    settings.LITEJOBS = {"WEBHOOK_ALLOWED_HOSTS": ["localhost", "127.0.0.1"]}
    endpoint = ensure_endpoint(live_server.url + RECEIVER)
    assert ensure_endpoint(live_server.url + RECEIVER).pk == endpoint.pk  # idempotent
    order = place_order("ada@example.com", total="12.50")

    relay = OutboxRelay(install_signals=False)
    assert relay.publish_pending() == 1
    relay.resign()
    counts = run_worker(queues=["emails", deliver.queue])
    assert counts == {"done": 3}  # the receipt, the warehouse email, the webhook delivery

    shipped = Job.objects.get(name=ask_warehouse_to_ship.name)
    assert (shipped.state, shipped.result) == (JobState.DONE, order.pk)
    delivery = WebhookDelivery.objects.get()
    assert (delivery.state, delivery.last_status) == ("delivered", 200)
    received = ReceivedWebhook.objects.get()
    assert received.delivery == str(delivery.pk)
    assert (received.topic, received.event_id) == ("orders.paid", delivery.message_id)
    assert received.data == {"order_id": order.pk, "total": "12.50", "currency": "EUR"}
