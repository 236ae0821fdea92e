"""Outbound webhooks against a real local HTTP server: signing, retries, disabling, addresses."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from datetime import timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from litejobs.core.enums import OperatorVerb
from litejobs.exceptions import SignatureInvalid, WebhookError
from litejobs.jobs import operations
from litejobs.models import (
    DeliveryState,
    Job,
    JobState,
    OperatorAction,
    WebhookDelivery,
    WebhookEndpoint,
)
from litejobs.outbox import stage
from litejobs.outbox.relay import OutboxRelay
from litejobs.webhooks import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    SignedDelivery,
    create_endpoint,
    disable_endpoint,
    enable_endpoint,
    verify_request,
)
from litejobs.webhooks.delivery import deliver

SECRET = "whsec_test_secret_of_enough_length"
LOCAL = {"WEBHOOK_ALLOWED_HOSTS": ["127.0.0.1"]}


class Receiver:
    """A real HTTP server on 127.0.0.1 that records requests and answers as told."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.answers: list[tuple[int, dict, bytes]] = []
        self.default = (200, {}, b"ok")
        self.delay = 0.0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.requests.append(
                    {"path": self.path, "headers": dict(self.headers.items()), "body": body}
                )
                if receiver.delay:
                    time.sleep(receiver.delay)
                status, headers, answer = (
                    receiver.answers.pop(0) if receiver.answers else receiver.default
                )
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str = "/hooks") -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    running = Receiver()
    yield running
    running.stop()


@pytest.fixture
def local(settings):
    settings.LITEJOBS = dict(LOCAL)
    return settings


def publish(relay: OutboxRelay | None = None) -> None:
    relay = relay or OutboxRelay(install_signals=False)
    relay.publish_pending()
    relay.resign()  # the next call's relay leads at once, whatever the frozen clock says


def publish_and_deliver(run_worker) -> dict:
    publish()
    return run_worker(queues=[deliver.queue], concurrency=1)


def delivery_job(delivery: WebhookDelivery) -> Job:
    return Job.objects.get(
        name=deliver.name, key=f"webhook:{delivery.endpoint_id}:{delivery.message_id}"
    )


# Endpoints and the address policy ----------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://127.0.0.1/hooks", "loopback"),
        ("http://localhost:8000/hooks", "loopback"),
        ("http://[::1]/hooks", "loopback"),
        ("http://10.1.2.3/hooks", "private"),
        ("http://192.168.0.10/hooks", "private"),
        ("http://172.16.5.4/hooks", "private"),
        ("http://169.254.169.254/latest/meta-data", "link-local"),
        ("http://0.0.0.0/hooks", "unspecified"),
        ("http://[::ffff:127.0.0.1]/hooks", "loopback"),
        ("http://224.0.0.1/hooks", "multicast"),
        ("http://100.64.0.1/hooks", "non-public"),
        ("http://240.0.0.1/hooks", "reserved"),
    ],
)
def test_an_endpoint_resolving_to_an_internal_address_is_refused(clock, url, kind):
    with pytest.raises(WebhookError) as refused:
        create_endpoint(url, ["test.webhook-only"])
    assert refused.value.code == "webhook-address-refused"
    assert refused.value.field == "url"
    assert f"a {kind} address" in str(refused.value)
    assert "WEBHOOK_ALLOWED_HOSTS" in str(refused.value)
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "topics", "secret", "code", "field"),
    [
        ("ftp://93.184.215.14/x", ["*"], SECRET, "webhook-url-invalid", "url"),
        ("/relative/path", ["*"], SECRET, "webhook-url-invalid", "url"),
        ("https://user:pw@93.184.215.14/x", ["*"], SECRET, "webhook-url-invalid", "url"),
        ("https://93.184.215.14:99999/x", ["*"], SECRET, "webhook-url-invalid", "url"),
        ("https://93.184.215.14:0/x", ["*"], SECRET, "webhook-url-invalid", "url"),
        ("https://93.184.215.14/x#part", ["*"], SECRET, "webhook-url-invalid", "url"),
        ("https://no-such-host.invalid/x", ["*"], SECRET, "webhook-host-unresolved", "url"),
        ("https://93.184.215.14/x", [], SECRET, "webhook-topics-invalid", "topics"),
        ("https://93.184.215.14/x", "test.other", SECRET, "webhook-topics-invalid", "topics"),
        ("https://93.184.215.14/x", ["test.nope"], SECRET, "webhook-topics-invalid", "topics"),
        ("https://93.184.215.14/x", ["*"], "short", "webhook-secret-invalid", "secret"),
    ],
)
def test_bad_endpoints_are_refused_and_nothing_is_written(clock, url, topics, secret, code, field):
    with pytest.raises(WebhookError) as refused:
        create_endpoint(url, topics, secret=secret)
    assert (refused.value.code, refused.value.field) == (code, field)
    assert "user:pw" not in str(refused.value) and "short" not in str(refused.value)
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.django_db
def test_a_public_endpoint_is_created_with_a_generated_secret(clock):
    endpoint = create_endpoint(
        "https://93.184.215.14/hooks?token=x", ["test.other", "test.webhook-only"]
    )
    assert endpoint.secret.startswith("whsec_") and len(endpoint.secret) > 40
    assert endpoint.topics == ["test.other", "test.webhook-only"]
    assert endpoint.enabled and endpoint.created_at == clock.now()
    assert str(endpoint) == f"#{endpoint.pk} https://93.184.215.14/…"  # never the path


@pytest.mark.django_db
def test_the_allowed_hosts_setting_lets_a_local_receiver_in(clock, settings):
    settings.LITEJOBS = {"WEBHOOK_ALLOWED_HOSTS": ["127.0.0.1", "localhost"]}
    assert create_endpoint("http://127.0.0.1:9/hooks", ["*"]).pk
    assert create_endpoint("http://localhost:9/hooks", ["*"]).pk
    with pytest.raises(WebhookError):
        create_endpoint("http://10.0.0.1/hooks", ["*"])


@pytest.mark.django_db
def test_model_validation_applies_the_same_rules(clock):
    endpoint = WebhookEndpoint(
        url="http://127.0.0.1/hooks", topics=["*"], secret=SECRET, created_at=clock.now()
    )
    with pytest.raises(ValidationError) as refused:
        endpoint.full_clean()
    assert "url" in refused.value.message_dict
    assert "webhook-address-refused" in refused.value.message_dict["url"][0]


# Delivery ----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_delivery_is_signed_and_verifies_at_the_receiver(clock, local, receiver, run_worker):
    endpoint = create_endpoint(receiver.url(), ["test.webhook-only"], secret=SECRET)
    message_id = stage("test.webhook-only", {"order": 3, "total": "9.90"}, key="order:3")
    stage("test.other", {"unwanted": True})  # another topic: not delivered here

    counts = publish_and_deliver(run_worker)
    assert counts == {"done": 1}
    [request] = receiver.requests
    headers = request["headers"]
    delivery = WebhookDelivery.objects.get()
    assert verify_request(SECRET, headers, request["body"]) == SignedDelivery(
        int(clock.now().timestamp()), str(delivery.pk), "test.webhook-only"
    )
    assert headers[EVENT_HEADER] == "test.webhook-only"
    assert headers[DELIVERY_HEADER] == str(delivery.pk)
    assert headers["Content-Type"] == "application/json"
    assert request["path"] == "/hooks"
    assert json.loads(request["body"]) == {
        "id": message_id,
        "topic": "test.webhook-only",
        "key": "order:3",
        "created_at": clock.now().isoformat(),
        "data": {"order": 3, "total": "9.90"},
    }
    # A body altered on the way, or the request replayed under another delivery id, fails.
    with pytest.raises(SignatureInvalid):
        verify_request(SECRET, headers, request["body"].replace(b"9.90", b"0"))
    with pytest.raises(SignatureInvalid):
        verify_request(SECRET, {**headers, DELIVERY_HEADER: "999"}, request["body"])

    assert delivery.state == DeliveryState.DELIVERED
    assert (delivery.attempts, delivery.last_status, delivery.message_id) == (1, 200, message_id)
    assert delivery.delivered_at == clock.now() and delivery.finished_at == clock.now()
    assert delivery.job_id == delivery_job(delivery).id
    assert delivery_job(delivery).state == JobState.DONE
    endpoint.refresh_from_db()
    assert (endpoint.consecutive_failures, endpoint.last_success_at) == (0, clock.now())


@pytest.mark.django_db(transaction=True)
def test_each_endpoint_gets_its_own_delivery_and_only_its_tenants_events(
    clock, local, receiver, run_worker
):
    everything = create_endpoint(receiver.url("/all"), ["*"], secret=SECRET)
    acme = create_endpoint(receiver.url("/acme"), ["test.webhook-only"], tenant="acme")
    stage("test.webhook-only", {"n": 1}, tenant="acme")
    stage("test.webhook-only", {"n": 2})
    stage("test.other", {"n": 3})
    publish_and_deliver(run_worker)
    got = sorted((r["path"], json.loads(r["body"])["data"]["n"]) for r in receiver.requests)
    assert got == [("/acme", 1), ("/all", 2), ("/all", 3)]
    assert WebhookDelivery.objects.filter(endpoint=acme).count() == 1
    assert WebhookDelivery.objects.filter(endpoint=everything).count() == 2
    assert (
        Job.objects.get(
            key=f"webhook:{acme.pk}:{WebhookDelivery.objects.get(endpoint=acme).message_id}"
        ).tenant
        == "acme"
    )


@pytest.mark.django_db(transaction=True)
def test_retry_after_seconds_sets_the_next_attempt(clock, local, receiver, run_worker):
    create_endpoint(receiver.url(), ["test.webhook-only"], secret=SECRET)
    receiver.answers = [(429, {"Retry-After": "120"}, b"slow down")]
    stage("test.webhook-only", {"n": 1})
    assert publish_and_deliver(run_worker) == {"failed": 1}
    delivery = WebhookDelivery.objects.get()
    job = delivery_job(delivery)
    assert job.state == JobState.FAILED
    assert job.run_at == clock.now() + timedelta(seconds=120)
    assert job.error_class == "litejobs.exceptions.RetryAfter"
    assert "HTTP 429: slow down" in job.error_message
    assert (delivery.state, delivery.attempts, delivery.last_status) == ("failed", 1, 429)

    clock.advance("119s")
    assert publish_and_deliver(run_worker) == {}  # not due yet
    clock.advance("1s")
    assert publish_and_deliver(run_worker) == {"done": 1}
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts, delivery.last_status) == ("delivered", 2, 200)
    assert len(receiver.requests) == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("value", ["9" * 30, "99999999999", "\u00b2"])
def test_a_hostile_retry_after_is_a_counted_failure_and_its_wait_is_bounded(
    clock, settings, receiver, run_worker, value
):
    """Huge or non-ASCII values neither crash the delivery (which would skip counting the
    failure, so the endpoint would never be disabled) nor park it beyond the policy's max."""
    settings.LITEJOBS = {**LOCAL, "WEBHOOK_MAX_FAILURES": 1}
    endpoint = create_endpoint(receiver.url(), ["test.webhook-only"], secret=SECRET)
    receiver.answers = [(503, {"Retry-After": value}, b"")]
    stage("test.webhook-only", {"n": 1})
    publish_and_deliver(run_worker)

    delivery = WebhookDelivery.objects.get()
    assert (delivery.attempts, delivery.last_status) == (1, 503)
    endpoint.refresh_from_db()
    assert endpoint.consecutive_failures == 1 and not endpoint.enabled  # disabled after 1
    assert delivery.state == DeliveryState.DEAD


@pytest.mark.django_db(transaction=True)
def test_a_retry_after_past_the_policys_max_waits_the_max(clock, local, receiver, run_worker):
    create_endpoint(receiver.url(), ["test.webhook-only"], secret=SECRET)
    receiver.answers = [(429, {"Retry-After": "99999999999"}, b"")]
    stage("test.webhook-only", {"n": 1})
    publish_and_deliver(run_worker)
    job = delivery_job(WebhookDelivery.objects.get())
    assert job.run_at == clock.now() + deliver.retry.max  # 2h, not three thousand years


@pytest.mark.django_db(transaction=True)
def test_retry_after_as_an_http_date_and_the_policy_without_it(clock, local, receiver, run_worker):
    create_endpoint(receiver.url(), ["test.webhook-only"], secret=SECRET)
    when = clock.now() + timedelta(minutes=7)
    receiver.answers = [(503, {"Retry-After": format_datetime(when, usegmt=True)}, b"")]
    stage("test.webhook-only", {"n": 1})
    publish_and_deliver(run_worker)
    assert delivery_job(WebhookDelivery.objects.get()).run_at == when

    receiver.answers = [(500, {}, b"boom")]
    stage("test.webhook-only", {"n": 2})
    publish_and_deliver(run_worker)
    second = delivery_job(
        WebhookDelivery.objects.get(
            message_id__gt=WebhookDelivery.objects.order_by("id").first().message_id
        )
    )
    delay = second.run_at - clock.now()
    # The policy's first backoff (30s, equal jitter: 15-30s), not a Retry-After.
    assert timedelta(seconds=15) <= delay <= timedelta(seconds=30)
    assert second.error_class == "litejobs.exceptions.WebhookError"
    assert "HTTP 500: boom" in second.error_message


@pytest.mark.django_db(transaction=True)
def test_an_endpoint_is_disabled_after_n_consecutive_failures(
    clock, settings, receiver, run_worker
):
    settings.LITEJOBS = {**LOCAL, "WEBHOOK_MAX_FAILURES": 2}
    endpoint = create_endpoint(receiver.url(), ["test.webhook-only"], secret=SECRET)
    receiver.default = (500, {}, b"down")
    first = stage("test.webhook-only", {"n": 1})
    second = stage("test.webhook-only", {"n": 2})

    publish_and_deliver(run_worker)  # both fail once: the second failure disables it
    endpoint.refresh_from_db()
    assert not endpoint.enabled
    assert endpoint.consecutive_failures == 2
    assert endpoint.disabled_by == "litejobs"
    assert endpoint.disabled_at == clock.now() and endpoint.failing_since == clock.now()
    assert "2 consecutive failed delivery attempts" in endpoint.disabled_reason
    assert "HTTP 500" in endpoint.disabled_reason
    one = WebhookDelivery.objects.get(message_id=first)
    two = WebhookDelivery.objects.get(message_id=second)
    assert (one.state, two.state) == ("failed", "dead")
    assert delivery_job(two).state == JobState.DEAD
    assert "was disabled after 2 consecutive failed attempts" in delivery_job(two).error_message

    clock.advance("1h")  # the first delivery's retry: skipped, the endpoint is disabled
    assert publish_and_deliver(run_worker) == {"done": 1}
    one.refresh_from_db()
    assert one.state == DeliveryState.SKIPPED and "disabled" in one.last_error
    assert len(receiver.requests) == 2  # nothing more was sent

    stage("test.webhook-only", {"n": 3})  # published while disabled: no delivery at all
    publish_and_deliver(run_worker)
    assert WebhookDelivery.objects.count() == 2

    enable_endpoint(endpoint.pk, by="ops")
    endpoint.refresh_from_db()
    assert endpoint.enabled and endpoint.consecutive_failures == 0
    assert (endpoint.disabled_reason, endpoint.disabled_at, endpoint.failing_since) == (
        "",
        None,
        None,
    )
    receiver.default = (200, {}, b"ok")
    operations.retry(delivery_job(one).id, by="ops")  # redeliver what was skipped
    assert publish_and_deliver(run_worker) == {"done": 1}
    one.refresh_from_db()
    assert one.state == DeliveryState.DELIVERED


@pytest.mark.django_db(transaction=True)
def test_a_success_resets_the_failure_streak(clock, settings, receiver, run_worker):
    settings.LITEJOBS = {**LOCAL, "WEBHOOK_MAX_FAILURES": 3}
    endpoint = create_endpoint(receiver.url(), ["test.webhook-only"], secret=SECRET)
    receiver.answers = [(500, {}, b""), (500, {}, b""), (200, {}, b""), (500, {}, b"")]
    for n in range(4):
        stage("test.webhook-only", {"n": n})
    publish_and_deliver(run_worker)
    endpoint.refresh_from_db()
    assert endpoint.enabled and endpoint.consecutive_failures == 1


@pytest.mark.django_db(transaction=True)
def test_the_address_is_checked_again_at_delivery(clock, settings, receiver, run_worker):
    settings.LITEJOBS = dict(LOCAL)
    endpoint = create_endpoint(receiver.url(), ["test.webhook-only"], secret=SECRET)
    settings.LITEJOBS = {}  # the host is no longer allowed (or its DNS now points inside)
    stage("test.webhook-only", {"n": 1})
    publish_and_deliver(run_worker)
    assert receiver.requests == []
    delivery = WebhookDelivery.objects.get()
    assert delivery.state == DeliveryState.DEAD  # refused for good, not retried
    assert "loopback address" in delivery.last_error
    assert delivery_job(delivery).state == JobState.DEAD
    endpoint.refresh_from_db()
    assert endpoint.consecutive_failures == 1


@pytest.mark.django_db(transaction=True)
def test_a_dns_rebind_after_the_check_cannot_reach_an_internal_address(
    clock, receiver, run_worker, monkeypatch
):
    """The host is resolved once per delivery and the connection goes to the address that was
    checked. Here DNS answers a public address to that one lookup and 127.0.0.1 to any later
    one (a rebind), where a receiver listens: it must never be reached. No packet goes to the
    public address either: the test refuses that connection before it is made."""
    host, public, port = "rebind.example", "93.184.215.14", receiver.server.server_address[1]
    answers, lookups, connected = [], [], []
    real_getaddrinfo, real_connect = socket.getaddrinfo, socket.socket.connect

    def rebinding_dns(name, *args, **kwargs):
        if name != host:
            return real_getaddrinfo(name, *args, **kwargs)
        address = answers.pop(0) if answers else "127.0.0.1"
        lookups.append(address)
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))]

    def connect(sock, address):
        if address[0] == public:
            connected.append(address)
            raise ConnectionRefusedError(111, "refused by the test: no traffic leaves")
        return real_connect(sock, address)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding_dns)
    monkeypatch.setattr(socket.socket, "connect", connect)
    answers.append(public)
    create_endpoint(f"http://{host}:{port}/hooks", ["test.webhook-only"], secret=SECRET)
    stage("test.webhook-only", {"n": 1})
    answers.append(public)  # the delivery's check sees a public address ...
    lookups.clear()
    publish_and_deliver(run_worker)  # ... and any second lookup would answer 127.0.0.1

    assert receiver.requests == []  # the rebound address was never reached
    assert lookups == [public]  # one lookup per delivery
    assert connected == [(public, port)]  # the connection went to the checked address
    delivery = WebhookDelivery.objects.get()
    assert delivery.state == DeliveryState.FAILED
    assert "ConnectionRefusedError" in delivery.last_error


@pytest.mark.django_db(transaction=True)
def test_redirects_are_not_followed(clock, local, receiver, run_worker):
    create_endpoint(receiver.url(), ["test.webhook-only"], secret=SECRET)
    receiver.answers = [(302, {"Location": receiver.url("/elsewhere")}, b"")]
    stage("test.webhook-only", {"n": 1})
    publish_and_deliver(run_worker)
    assert [r["path"] for r in receiver.requests] == ["/hooks"]
    delivery = WebhookDelivery.objects.get()
    assert (delivery.state, delivery.last_status) == ("failed", 302)


@pytest.mark.django_db(transaction=True)
def test_a_slow_receiver_is_a_failed_attempt(clock, settings, receiver, run_worker):
    settings.LITEJOBS = {**LOCAL, "WEBHOOK_TIMEOUT": "0.3s"}
    create_endpoint(receiver.url(), ["test.webhook-only"], secret=SECRET)
    receiver.delay = 1.0
    stage("test.webhook-only", {"n": 1})
    publish_and_deliver(run_worker)
    delivery = WebhookDelivery.objects.get()
    assert delivery.state == DeliveryState.FAILED and delivery.last_status is None
    assert "no answer within" in delivery.last_error


@pytest.mark.django_db(transaction=True)
def test_a_refused_connection_is_a_failed_attempt(clock, local, run_worker):
    closed = Receiver()
    url = closed.url()
    closed.stop()  # nothing listens there any more
    create_endpoint(url, ["test.webhook-only"], secret=SECRET)
    stage("test.webhook-only", {"n": 1})
    publish_and_deliver(run_worker)
    delivery = WebhookDelivery.objects.get()
    assert delivery.state == DeliveryState.FAILED
    assert "ConnectionRefusedError" in delivery.last_error


#: A sensitive value with digits, letters, a slash and a non-ASCII letter, so that each way a
#: receiver may echo it differs from the value itself.
CARD = "tok/Zürich-4111111111111111"
#: How a receiver may echo it: whole, past the first 500 bytes (a cut keeps part of it),
#: \u-escaped, \/-escaped, URL-encoded and upper-cased.
ECHOES = {
    "whole": CARD,
    "straddling the cut": "x" * 490 + CARD,
    "u-escaped": "".join(f"\\u{ord(c):04x}" for c in CARD),
    "slash-escaped": CARD.replace("/", "\\/"),
    "url-encoded": quote(CARD, safe=""),
    "upper-cased": CARD.upper(),
}


def _shows_part_of_the_card(text: str) -> bool:
    """Whether ``text`` holds any 8 characters in a row of the card in any echoed form."""
    return any(
        form[i : i + 8].lower() in text.lower()
        for form in ECHOES.values()
        for i in range(len(form) - 7)
        if "xxxx" not in form[i : i + 8]
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("echo", list(ECHOES), ids=list(ECHOES))
def test_a_receiver_echoing_a_sensitive_field_never_gets_it_stored_or_logged(
    clock, settings, receiver, run_worker, caplog, echo
):
    """Of an answer to an event whose topic has sensitive fields, only its status, length and
    content type are kept: no scrubbing recognises every form an echo may take."""
    settings.LITEJOBS = {**LOCAL, "WEBHOOK_MAX_FAILURES": 1}
    endpoint = create_endpoint(receiver.url(), ["test.card-charged"], secret=SECRET)
    answer = f'{{"error": "card {ECHOES[echo]} is expired"}}'.encode()
    receiver.default = (422, {"Content-Type": "application/json; charset=utf-8"}, answer)
    stage("test.card-charged", {"order": 3, "card": CARD})
    caplog.set_level(logging.INFO, logger="litejobs")
    publish_and_deliver(run_worker)
    assert json.loads(receiver.requests[0]["body"])["data"]["card"] == CARD  # it was sent
    delivery = WebhookDelivery.objects.get()
    endpoint.refresh_from_db()
    job = delivery_job(delivery)
    assert not endpoint.enabled
    assert delivery.last_error == (
        f"HTTP 422 ({len(answer)} bytes, application/json; the answer is not kept: the topic "
        "has sensitive fields)"
    )
    for text in (
        delivery.last_error,
        endpoint.disabled_reason,
        job.error_message,
        job.error_traceback,
        caplog.text,
    ):
        assert not _shows_part_of_the_card(text)


@pytest.mark.django_db(transaction=True)
def test_a_receiver_echoing_a_sensitive_field_in_its_headers_never_gets_it_stored(
    clock, settings, run_worker, caplog
):
    """A malformed status line (quoted by the HTTP client's error) and the content type are the
    receiver's text too: neither is kept for a topic with sensitive fields."""
    settings.LITEJOBS = {**LOCAL, "WEBHOOK_MAX_FAILURES": 2}
    listener = socket.create_server(("127.0.0.1", 0))
    status_lines = [
        f"HTTP/1.1 {CARD} OK\r\n\r\n".encode(),
        f"HTTP/1.1 500 Oops\r\nContent-Type: text/{quote(CARD)}\r\n"
        "Content-Length: 0\r\n\r\n".encode(),
    ]

    def answer() -> None:
        for line in status_lines:
            peer, _ = listener.accept()
            with peer:
                peer.recv(65536)
                peer.sendall(line)

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/hooks"
    create_endpoint(url, ["test.card-charged"], secret=SECRET)
    stage("test.card-charged", {"order": 3, "card": CARD})
    stage("test.card-charged", {"order": 4, "card": CARD})
    caplog.set_level(logging.INFO, logger="litejobs")
    try:
        publish_and_deliver(run_worker)
    finally:
        thread.join(5)
        listener.close()
    errors = sorted(WebhookDelivery.objects.values_list("last_error", flat=True))
    assert errors == [
        "BadStatusLine (its text is not kept: the topic has sensitive fields)",
        "HTTP 500 (0 bytes, another content type; the answer is not kept: the topic has "
        "sensitive fields)",
    ]
    assert not _shows_part_of_the_card(caplog.text)


@pytest.mark.django_db(transaction=True)
def test_the_answer_to_an_event_without_sensitive_fields_is_kept(
    clock, local, receiver, run_worker
):
    create_endpoint(receiver.url(), ["test.webhook-only"], secret=SECRET)
    receiver.default = (400, {}, b"x" * 600)
    stage("test.webhook-only", {"n": 1})
    publish_and_deliver(run_worker)
    assert WebhookDelivery.objects.get().last_error == "HTTP 400: " + "x" * 500


@pytest.mark.django_db
def test_disable_needs_a_reason_and_unknown_endpoints_are_named(clock):
    endpoint = create_endpoint("https://93.184.215.14/hooks", ["*"])
    with pytest.raises(Exception) as missing:
        disable_endpoint(endpoint.pk, reason=" ", by="ops")
    assert missing.value.code == "reason-required"
    disabled = disable_endpoint(endpoint.pk, reason="receiver migrating", by="ops")
    assert (disabled.enabled, disabled.disabled_by) == (False, "ops")
    assert disabled.disabled_reason == "receiver migrating"
    with pytest.raises(Exception) as unknown:
        enable_endpoint(endpoint.pk + 100, by="ops")
    assert unknown.value.code == "webhook-endpoint-not-found"


@pytest.mark.django_db
def test_enabling_and_disabling_an_endpoint_is_in_the_operator_action_log(clock):
    endpoint = create_endpoint("https://93.184.215.14/hooks", ["*"])
    disable_endpoint(endpoint.pk, reason="receiver migrating", by="ops")
    enable_endpoint(endpoint.pk, by="dev", reason="migrated")
    with pytest.raises(Exception) as unknown:
        disable_endpoint(endpoint.pk + 100, reason="x", by="ops")
    assert unknown.value.code == "webhook-endpoint-not-found"
    rows = OperatorAction.objects.order_by("pk").values_list(
        "verb", "by", "reason", "filter", "change"
    )
    where = {"endpoint": endpoint.pk, "url": "https://93.184.215.14/…"}
    assert list(rows) == [
        (
            OperatorVerb.ENDPOINT_DISABLE,
            "ops",
            "receiver migrating",
            where,
            {"enabled": [True, False]},
        ),
        (OperatorVerb.ENDPOINT_ENABLE, "dev", "migrated", where, {"enabled": [False, True]}),
    ]


@pytest.mark.django_db
def test_the_admins_endpoint_actions_log_the_user(clock, client, admin_user):
    endpoint = create_endpoint("https://93.184.215.14/hooks", ["*"])
    client.force_login(admin_user)
    listing = reverse("admin:litejobs_webhookendpoint_changelist")
    selected = {"action": "disable_endpoints", "_selected_action": [str(endpoint.pk)]}
    client.post(listing, {**selected, "apply": "1", "reason": "rotating"})
    client.post(listing, {"action": "enable_endpoints", "_selected_action": [str(endpoint.pk)]})
    rows = OperatorAction.objects.order_by("pk").values_list("verb", "by", "user_id", "reason")
    assert list(rows) == [
        (OperatorVerb.ENDPOINT_DISABLE, "admin", admin_user.pk, "rotating"),
        (OperatorVerb.ENDPOINT_ENABLE, "admin", admin_user.pk, ""),
    ]


@pytest.mark.django_db(transaction=True)
def test_a_deleted_endpoints_deliveries_are_dropped(clock, local, receiver, run_worker):
    endpoint = create_endpoint(receiver.url(), ["test.webhook-only"], secret=SECRET)
    stage("test.webhook-only", {"n": 1})
    publish()
    job = Job.objects.get(name=deliver.name)
    endpoint.delete()
    assert not WebhookDelivery.objects.exists()
    assert run_worker(queues=[deliver.queue]) == {"done": 1}
    assert Job.objects.get(pk=job.pk).result == {"skipped": "endpoint deleted"}
    assert receiver.requests == []


class DrippingReceiver:
    """A hostile receiver: it reads the request, then answers one byte at a time, ``every``
    seconds apart, for as long as the client waits (each byte keeps a per-read timeout happy)."""

    def __init__(self, every: float = 0.2) -> None:
        self.every = every
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.connections = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}/hooks"

    def _serve(self) -> None:
        self.listener.settimeout(0.1)
        while not self.stopped.is_set():
            try:
                peer, _ = self.listener.accept()
            except TimeoutError:
                continue
            self.connections += 1
            threading.Thread(target=self._drip, args=(peer,), daemon=True).start()

    def _drip(self, peer: socket.socket) -> None:
        answer = b"HTTP/1.1 200 OK\r\nX-Padding: " + b"x" * 10_000 + b"\r\n\r\n"
        with peer:
            peer.recv(65536)
            for byte in answer:
                if self.stopped.wait(self.every):
                    return
                try:
                    peer.sendall(bytes([byte]))
                except OSError:
                    return

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()
        self.listener.close()


def _sessions() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_dripping_receiver_fails_within_the_deadline_and_disables_its_endpoint(
    clock, settings, run_worker
):
    settings.LITEJOBS = {**LOCAL, "WEBHOOK_TIMEOUT": "1s", "WEBHOOK_MAX_FAILURES": 2}
    dripping = DrippingReceiver(every=0.2)
    try:
        endpoint = create_endpoint(dripping.url(), ["test.webhook-only"], secret=SECRET)
        stage("test.webhook-only", {"n": 1})
        stage("test.webhook-only", {"n": 2})
        publish()
        sessions = _sessions()
        started = time.monotonic()
        assert run_worker(queues=[deliver.queue], concurrency=1) == {"failed": 1, "dead": 1}
        # Two deliveries, one after the other, each cut at its deadline (1s) whatever the drip.
        assert time.monotonic() - started < 2 * (1 + 1)
        assert dripping.connections == 2
    finally:
        dripping.stop()
    assert _sessions() <= sessions
    endpoint.refresh_from_db()
    assert (endpoint.enabled, endpoint.consecutive_failures) == (False, 2)
    assert "no answer within LITEJOBS['WEBHOOK_TIMEOUT']" in endpoint.disabled_reason
    states = sorted(WebhookDelivery.objects.values_list("state", "attempts", "last_status"))
    assert states == [("dead", 1, None), ("failed", 1, None)]


@pytest.mark.django_db(transaction=True)
def test_an_attempt_past_its_timeout_records_nothing_and_counts_as_a_failure(
    clock, settings, receiver, run_worker, monkeypatch
):
    """The delivery job's own timeout passes while the receiver still answers: the late answer
    is not recorded (not even a success), and the next attempt counts the unanswered one."""
    settings.LITEJOBS = {**LOCAL, "WEBHOOK_MAX_FAILURES": 2}
    monkeypatch.setattr(deliver, "timeout", timedelta(seconds=0.5))
    endpoint = create_endpoint(receiver.url(), ["test.webhook-only"], secret=SECRET)
    receiver.delay = 1.5
    stage("test.webhook-only", {"n": 1})
    assert publish_and_deliver(run_worker) == {"failed": 1}
    delivery = WebhookDelivery.objects.get()
    job = delivery_job(delivery)
    assert (job.state, job.error_class) == (JobState.FAILED, "litejobs.Timeout")
    assert len(receiver.requests) == 1  # it got there, and answered 200 late
    assert (delivery.state, delivery.attempts, delivery.last_status) == ("failed", 0, None)
    assert delivery.last_error.startswith("No answer recorded")
    endpoint.refresh_from_db()
    assert endpoint.consecutive_failures == 0 and endpoint.last_success_at is None

    receiver.delay = 0
    receiver.default = (500, {}, b"down")
    clock.advance("1h")
    assert publish_and_deliver(run_worker) == {"dead": 1}
    endpoint.refresh_from_db()
    # The unanswered attempt and this failure: the endpoint's streak reached 2.
    assert (endpoint.enabled, endpoint.consecutive_failures) == (False, 2)
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts, delivery.last_status) == ("dead", 2, 500)
