"""The outbox and webhooks in the admin, doctor and metrics."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.contrib.messages import get_messages
from django.core.management import call_command
from django.urls import reverse

from litejobs.metrics.collector import registry
from litejobs.models import Job, OutboxMessage, WebhookDelivery, WebhookEndpoint
from litejobs.outbox import stage
from litejobs.outbox.relay import OutboxRelay
from litejobs.webhooks import create_endpoint
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

MESSAGES = reverse("admin:litejobs_outboxmessage_changelist")
ENDPOINTS = reverse("admin:litejobs_webhookendpoint_changelist")
DELIVERIES = reverse("admin:litejobs_webhookdelivery_changelist")


def texts(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def publish() -> None:
    relay = OutboxRelay(install_signals=False)
    relay.publish_pending()
    relay.resign()


CARD = "4111111111111111"
NOTE = "the-customer-is-moving-to-Lisbon"


def show_json(job_id: int) -> str:
    out = io.StringIO()
    call_command("litejobs", "show", str(job_id), "--json", stdout=out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("topic", "payload", "secret", "kept"),
    [
        # The topic declares the field sensitive: that field goes, the others stay.
        ("test.card-charged", {"order": 7, "card": CARD}, CARD, '"order": 7'),
        # A subscriber declares its whole message sensitive: every field goes.
        ("test.private-note", {"order": 7, "note": NOTE}, NOTE, None),
    ],
)
def test_a_message_declared_sensitive_is_redacted_wherever_it_shows(
    admin_client, clock, settings, topic, payload, secret, kept
):
    settings.LITEJOBS = {"WEBHOOK_ALLOWED_HOSTS": ["127.0.0.1"]}
    create_endpoint("http://127.0.0.1:9/hooks", ["*"])
    message_id = stage(topic, payload)
    publish()
    jobs = list(Job.objects.filter(key__contains=f"{message_id}"))
    names = {job.name for job in jobs}
    assert "litejobs.webhook_delivery" in names and len(names) == 2  # and its subscriber's
    pages = [reverse("admin:litejobs_outboxmessage_change", args=[message_id])]
    pages += [reverse("admin:litejobs_job_change", args=[job.pk]) for job in jobs]
    for page in pages:
        response = admin_client.get(page)
        text = response.content.decode()
        assert response.status_code == 200
        assert secret not in text, page
        assert "[redacted]" in text, page
        if kept:
            assert kept.replace('"', "&quot;") in text, page
    for job in jobs:
        shown = show_json(job.pk)
        assert secret not in shown
        data = json.loads(shown)
        assert data["payload"]["message_id"] == message_id  # the envelope itself is shown
        if kept:
            assert data["payload"]["payload"] == {"order": 7, "card": "[redacted]"}
        else:
            assert data["payload"]["payload"] == "[redacted]"


def test_the_outbox_listing_filters_by_state_and_topic_and_shows_the_backlog(admin_client, clock):
    stage("test.order-paid", {"order": 1}, key="order:1")
    publish()
    pending = stage("test.webhook-only", {"n": 1})
    clock.advance("5m")
    response = admin_client.get(MESSAGES)
    assert response.status_code == 200
    page = response.content.decode()
    assert "<strong>1 message pending</strong>" in page
    assert f"(id {pending}, test.webhook-only) has waited 5m" in page
    assert "Relay leader" in page
    shown = lambda r: [m.pk for m in r.context["cl"].result_list]  # noqa: E731
    assert shown(admin_client.get(MESSAGES, {"state": "pending"})) == [pending]
    assert len(shown(admin_client.get(MESSAGES, {"state": "published"}))) == 1
    assert shown(admin_client.get(MESSAGES, {"topic": "test.webhook-only"})) == [pending]
    assert len(shown(admin_client.get(MESSAGES, {"q": "order:1"}))) == 1
    assert shown(admin_client.get(MESSAGES, {"q": str(pending)})) == [pending]


def test_a_message_page_links_its_jobs_and_deliveries_and_nothing_is_editable(
    admin_client, clock, settings
):
    settings.LITEJOBS = {"WEBHOOK_ALLOWED_HOSTS": ["127.0.0.1"]}
    create_endpoint("http://127.0.0.1:9/hooks", ["*"])
    message_id = stage("test.order-paid", {"order": 4})
    publish()
    page = admin_client.get(reverse("admin:litejobs_outboxmessage_change", args=[message_id]))
    text = page.content.decode()
    assert page.status_code == 200
    for job in Job.objects.filter(key=f"outbox:{message_id}"):
        assert reverse("admin:litejobs_job_change", args=[job.pk]) in text
    delivery = WebhookDelivery.objects.get()
    assert reverse("admin:litejobs_webhookdelivery_change", args=[delivery.pk]) in text
    assert "&quot;order&quot;: 4" in text
    assert admin_client.get(reverse("admin:litejobs_outboxmessage_add")).status_code == 403
    assert (
        admin_client.post(
            reverse("admin:litejobs_outboxmessage_delete", args=[message_id]), {"post": "yes"}
        ).status_code
        == 403
    )
    assert OutboxMessage.objects.filter(pk=message_id).exists()


def test_a_subscriber_job_names_its_message_on_its_page_and_in_show(admin_client, clock):
    message_id = stage("test.order-paid", {"order": 4})
    publish()
    message_page = reverse("admin:litejobs_outboxmessage_change", args=[message_id])
    jobs = Job.objects.filter(key=f"outbox:{message_id}")
    assert jobs.count() == 2  # one per subscriber of the topic
    for job in jobs:
        page = admin_client.get(reverse("admin:litejobs_job_change", args=[job.pk]))
        assert f'<a href="{message_page}">outbox message {message_id}</a>' in page.content.decode()
        shown = json.loads(show_json(job.pk))
        assert shown["outbox_message"] == message_id and shown["bulk_action"] is None


def test_an_endpoint_added_in_the_admin_is_validated_and_gets_a_secret(
    admin_client, clock, settings
):
    add = reverse("admin:litejobs_webhookendpoint_add")
    form = admin_client.get(add)
    assert "test.order-paid" in form.content.decode()  # the declared topics are the choices
    refused = admin_client.post(
        add, {"url": "http://10.0.0.5/hooks", "topics": ["test.order-paid"], "tenant": ""}
    )
    assert refused.status_code == 200
    assert "webhook-address-refused" in refused.content.decode()
    assert not WebhookEndpoint.objects.exists()

    settings.LITEJOBS = {"WEBHOOK_ALLOWED_HOSTS": ["127.0.0.1"]}
    saved = admin_client.post(
        add, {"url": "http://127.0.0.1:9/hooks", "topics": ["test.order-paid", "*"]}
    )
    assert saved.status_code == 302, saved.content.decode()[:2000]
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.secret.startswith("whsec_")
    assert endpoint.topics == ["*", "test.order-paid"]
    assert endpoint.created_at == clock.now()
    listing = admin_client.get(ENDPOINTS).content.decode()
    assert "http://127.0.0.1:9/…" in listing and "/hooks" not in listing

    # Editing without a new secret keeps the current one.
    change = reverse("admin:litejobs_webhookendpoint_change", args=[endpoint.pk])
    admin_client.post(change, {"url": "http://127.0.0.1:9/v2", "topics": ["test.other"]})
    endpoint.refresh_from_db()
    assert endpoint.url.endswith("/v2") and endpoint.secret.startswith("whsec_")
    short = admin_client.post(change, {"url": endpoint.url, "topics": ["*"], "secret": "short"})
    assert "webhook-secret-invalid" in short.content.decode()


def test_the_saved_secret_is_never_shown_and_a_blank_keeps_it(admin_client, clock, settings):
    settings.LITEJOBS = {"WEBHOOK_ALLOWED_HOSTS": ["127.0.0.1"]}
    endpoint = create_endpoint("http://127.0.0.1:9/hooks", ["*"])
    change = reverse("admin:litejobs_webhookendpoint_change", args=[endpoint.pk])
    page = admin_client.get(change).content.decode()
    assert endpoint.secret not in page
    assert 'type="password"' in page and 'name="secret"' in page

    kept = admin_client.post(change, {"url": endpoint.url, "topics": ["*"], "secret": ""})
    assert kept.status_code == 302
    assert WebhookEndpoint.objects.get().secret == endpoint.secret
    refused = admin_client.post(change, {"url": "http://10.0.0.5/x", "topics": ["*"]})
    assert endpoint.secret not in refused.content.decode()  # not on a re-rendered form either
    rotated = "whsec_rotated_secret_of_enough_length"
    admin_client.post(change, {"url": endpoint.url, "topics": ["*"], "secret": rotated})
    assert WebhookEndpoint.objects.get().secret == rotated
    assert rotated not in admin_client.get(change).content.decode()

    # A new endpoint's form proposes a fresh secret to copy before saving; it is the one saved.
    add = admin_client.get(reverse("admin:litejobs_webhookendpoint_add")).content.decode()
    proposed = re.search(r'name="secret" value="(whsec_[^"]+)"', add).group(1)
    admin_client.post(
        reverse("admin:litejobs_webhookendpoint_add"),
        {"url": "http://127.0.0.1:9/new", "topics": ["*"], "secret": proposed},
    )
    assert WebhookEndpoint.objects.get(url__endswith="/new").secret == proposed


def test_endpoints_are_disabled_with_a_reason_and_enabled_again(admin_client, clock):
    endpoint = create_endpoint("https://93.184.215.14/hooks", ["*"])
    selected = {"_selected_action": [str(endpoint.pk)]}
    asked = admin_client.post(ENDPOINTS, {"action": "disable_endpoints", **selected})
    assert asked.status_code == 200 and "reason" in asked.content.decode()
    done = admin_client.post(
        ENDPOINTS,
        {"action": "disable_endpoints", "apply": "1", "reason": "receiver moving", **selected},
        follow=True,
    )
    assert f"Endpoint {endpoint.pk} is disabled." in texts(done)
    endpoint.refresh_from_db()
    assert not endpoint.enabled and endpoint.disabled_by == "admin"
    assert endpoint.disabled_reason == "receiver moving"

    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(consecutive_failures=7)
    enabled = admin_client.post(ENDPOINTS, {"action": "enable_endpoints", **selected}, follow=True)
    assert any("is enabled" in t for t in texts(enabled))
    endpoint.refresh_from_db()
    assert endpoint.enabled and endpoint.consecutive_failures == 0


def test_a_viewer_sees_endpoints_but_cannot_act_or_edit(client, clock):
    endpoint = create_endpoint("https://93.184.215.14/hooks", ["*"])
    viewer = UserFactory(
        username="viewer",
        permissions=[
            "litejobs.view_webhookendpoint",
            "litejobs.view_webhookdelivery",
            "litejobs.view_outboxmessage",
        ],
    )
    client.force_login(viewer)
    listing = client.get(ENDPOINTS)
    assert listing.status_code == 200
    assert "disable_endpoints" not in listing.content.decode()
    client.post(
        ENDPOINTS,
        {
            "action": "disable_endpoints",
            "apply": "1",
            "reason": "x",
            "_selected_action": [str(endpoint.pk)],
        },
    )
    endpoint.refresh_from_db()
    assert endpoint.enabled
    page = client.get(reverse("admin:litejobs_webhookendpoint_change", args=[endpoint.pk]))
    assert page.status_code == 200
    assert endpoint.secret not in page.content.decode()
    assert "/hooks" not in page.content.decode()  # the URL's path may carry a token
    assert client.get(MESSAGES).status_code == 200


def test_a_viewer_reads_an_endpoints_topics_comma_separated(client, clock):
    endpoint = create_endpoint("https://93.184.215.14/hooks", ["test.order-paid", "test.other"])
    viewer = UserFactory(username="viewer", permissions=["litejobs.view_webhookendpoint"])
    client.force_login(viewer)
    page = client.get(reverse("admin:litejobs_webhookendpoint_change", args=[endpoint.pk]))
    content = page.content.decode()
    assert '<div class="readonly">test.order-paid, test.other</div>' in content
    assert "[&quot;" not in content and '["' not in content


def test_deliveries_are_listed_and_redelivered_through_their_job(admin_client, clock, settings):
    settings.LITEJOBS = {"WEBHOOK_ALLOWED_HOSTS": ["127.0.0.1"]}
    create_endpoint("http://127.0.0.1:9/hooks", ["*"])
    stage("test.webhook-only", {"n": 1})
    publish()
    delivery = WebhookDelivery.objects.get()
    job = Job.objects.get(key=f"webhook:{delivery.endpoint_id}:{delivery.message_id}")
    Job.objects.filter(pk=job.pk).update(state="dead", finished_at=clock.now())
    WebhookDelivery.objects.filter(pk=delivery.pk).update(state="dead", finished_at=clock.now())

    listing = admin_client.get(DELIVERIES, {"state": "dead"})
    assert [d.pk for d in listing.context["cl"].result_list] == [delivery.pk]
    page = admin_client.get(reverse("admin:litejobs_webhookdelivery_change", args=[delivery.pk]))
    assert reverse("admin:litejobs_job_change", args=[job.pk]) in page.content.decode()

    done = admin_client.post(
        DELIVERIES, {"action": "redeliver", "_selected_action": [str(delivery.pk)]}, follow=True
    )
    assert f"Delivery {delivery.pk} will be sent again." in texts(done)
    assert Job.objects.get(pk=job.pk).state == "ready"
    assert WebhookDelivery.objects.get().state == "pending"


# doctor and metrics ------------------------------------------------------------------------


def doctor(*args: str) -> tuple[int, dict]:
    out = io.StringIO()
    try:
        call_command("litejobs", "doctor", "--json", *args, stdout=out)
        code = 0
    except SystemExit as exit:
        code = exit.code
    return code, json.loads(out.getvalue())


def test_doctor_reports_an_outbox_backlog_and_an_endpoint_litejobs_disabled(clock):
    assert doctor()[0] == 0
    stage("test.webhook-only", {"order": 1})
    clock.advance("10m")
    code, report = doctor("--max-ready-age", "5m")
    assert code == 3
    [problem] = [p for p in report["problems"] if p["code"] == "outbox-backlog"]
    assert problem["count"] == 1 and "runrelay" in problem["message"]
    assert "no relay has ever published" in problem["message"]

    publish()
    endpoint = create_endpoint("https://93.184.215.14/hooks", ["*"])
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        enabled=False, disabled_by="litejobs", disabled_reason="20 consecutive failures."
    )
    code, report = doctor()
    assert [p["code"] for p in report["problems"]] == ["webhook-disabled"]
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(disabled_by="ops")
    code, report = doctor()
    assert code == 0 and any("disabled" in note for note in report["notes"])


def test_metrics_expose_the_backlog_and_endpoint_health(clock):
    stage("test.order-paid", {"order": 1})
    clock.advance("42s")
    endpoint = create_endpoint("https://93.184.215.14/hooks", ["*"])
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(consecutive_failures=3)
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in registry().collect()
        for s in family.samples
    }
    assert samples[("litejobs_outbox_pending", ())] == 1
    assert samples[("litejobs_outbox_oldest_pending_age_seconds", ())] == 42
    endpoint_label = (("endpoint", str(endpoint.pk)),)
    assert samples[("litejobs_webhook_endpoint_enabled", endpoint_label)] == 1
    assert samples[("litejobs_webhook_endpoint_consecutive_failures", endpoint_label)] == 3
