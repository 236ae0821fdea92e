"""Webhook signatures and Retry-After, the pure parts: what a receiver verifies, and how long a
sender waits."""

from __future__ import annotations

from datetime import timedelta
from email.utils import format_datetime

import pytest

from litejobs.exceptions import SignatureInvalid
from litejobs.webhooks import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    RETRY_AFTER_MAX,
    SIGNATURE_HEADER,
    SignedDelivery,
    retry_after,
    sign,
    verify_request,
    verify_signature,
)

SECRET = "whsec_test_secret_of_enough_length"

DELIVERY, TOPIC = "41", "orders.paid"


def signed(secret: str, body: bytes, timestamp: int, *, delivery=DELIVERY, event=TOPIC) -> str:
    return sign(secret, body, timestamp, delivery=delivery, event=event)


def verify(header, body, now, *, delivery=DELIVERY, event=TOPIC, **options) -> int:
    return verify_signature(
        SECRET, header, body, delivery=delivery, event=event, now=now, **options
    )


def test_a_signature_verifies_and_answers_its_timestamp():
    body = b'{"id":1,"topic":"orders.paid"}'
    header = signed(SECRET, body, 1_800_000_000)
    assert header.startswith("t=1800000000,v2=")
    assert verify(header, body, 1_800_000_100) == 1_800_000_000
    assert verify(header, body.decode(), 1_800_000_000) == 1_800_000_000
    headers = {SIGNATURE_HEADER: header, DELIVERY_HEADER: DELIVERY, EVENT_HEADER: TOPIC}
    assert verify_request(SECRET, headers, body, now=1_800_000_000) == SignedDelivery(
        1_800_000_000, DELIVERY, TOPIC
    )
    lower = {name.lower(): value for name, value in headers.items()}  # any header case
    assert verify_request(SECRET, lower, body, now=1_800_000_000).delivery == DELIVERY


def test_the_signature_covers_the_delivery_id_and_the_topic():
    """What receivers deduplicate and route on is signed: a captured request replayed under a
    new delivery id inside the window, or relabelled with another topic, does not verify."""
    body = b'{"id":1}'
    header = signed(SECRET, body, 1_800_000_000)
    for changed in ({"delivery": "42"}, {"event": "orders.refunded"}):
        with pytest.raises(SignatureInvalid) as refused:
            verify(header, body, 1_800_000_000, **changed)
        assert refused.value.code == "webhook-signature-mismatch"
    # The pieces cannot slide into each other (each ends at a newline).
    assert signed(SECRET, b"x", 1, delivery="4", event="a.b") != signed(
        SECRET, b"x", 1, delivery="4", event="a"
    )
    for missing in ({"delivery": None}, {"event": ""}, {"delivery": "4 2"}, {"event": "a\nb"}):
        with pytest.raises(SignatureInvalid) as refused:
            verify(header, body, 1_800_000_000, **missing)
        assert refused.value.code == "webhook-signature-malformed"


@pytest.mark.parametrize(
    ("header", "body", "now", "code"),
    [
        (None, b"{}", 1_800_000_000, "webhook-signature-missing"),
        ("", b"{}", 1_800_000_000, "webhook-signature-missing"),
        ("v2=" + "a" * 64, b"{}", 1_800_000_000, "webhook-signature-malformed"),
        ("t=1800000000", b"{}", 1_800_000_000, "webhook-signature-malformed"),
        ("t=soon,v2=" + "a" * 64, b"{}", 1_800_000_000, "webhook-signature-malformed"),
        # The older scheme (no delivery id, no topic) is not accepted.
        ("t=1800000000,v1=" + "a" * 64, b"{}", 1_800_000_000, "webhook-signature-malformed"),
        # Digits of other scripts, which int() reads: ASCII only.
        ("t=\u0661\u0668" + "0" * 8 + ",v2=" + "a" * 64, b"{}", 1, "webhook-signature-malformed"),
        ("t=\u00b2,v2=" + "a" * 64, b"{}", 1, "webhook-signature-malformed"),
        # Unbounded values are refused before any arithmetic on them.
        ("t=" + "9" * 5000 + ",v2=" + "a" * 64, b"{}", 1, "webhook-signature-malformed"),
        ("t=" + "9" * 13 + ",v2=" + "a" * 64, b"{}", 1, "webhook-signature-malformed"),
        ("t=1800000000" + ",v2=" + "a" * 64 * 40, b"{}", 1, "webhook-signature-malformed"),
        ("t=1800000000" + ",v2=" + "a" * 64 * 9, b"{}", 1, "webhook-signature-malformed"),
        ("t=1800000000,t=1800000001,v2=" + "a" * 64, b"{}", 1, "webhook-signature-malformed"),
        ("t=1800000000,v2=XYZ", b"{}", 1, "webhook-signature-malformed"),
        # A tampered body.
        (
            signed(SECRET, b'{"amount":1}', 1_800_000_000),
            b'{"amount":9}',
            1_800_000_000,
            "webhook-signature-mismatch",
        ),
        # Another secret.
        (
            signed("whsec_another_secret_entirely", b"{}", 1_800_000_000),
            b"{}",
            1_800_000_000,
            "webhook-signature-mismatch",
        ),
        # A tampered timestamp (the MAC covers it).
        (
            signed(SECRET, b"{}", 1_800_000_000).replace("t=1800000000", "t=1800000100"),
            b"{}",
            1_800_000_100,
            "webhook-signature-mismatch",
        ),
        # Expired: replayed six minutes later, and a timestamp from the future.
        (signed(SECRET, b"{}", 1_800_000_000), b"{}", 1_800_000_360, "webhook-signature-expired"),
        (signed(SECRET, b"{}", 1_800_000_400), b"{}", 1_800_000_000, "webhook-signature-expired"),
    ],
)
def test_a_bad_signature_is_refused_with_a_stable_code(header, body, now, code):
    with pytest.raises(SignatureInvalid) as refused:
        verify(header, body, now)
    assert refused.value.code == code
    assert SECRET not in str(refused.value)


def test_the_tolerance_is_the_receivers_choice_and_rotated_secrets_verify():
    header = signed(SECRET, b"{}", 1_800_000_000)
    assert verify(header, b"{}", 1_800_000_900, tolerance=1000)
    rotated = header + ",v2=" + signed("whsec_the_next_secret_value", b"{}", 1_800_000_000)[-64:]
    assert verify_signature(
        "whsec_the_next_secret_value",
        rotated,
        b"{}",
        delivery=DELIVERY,
        event=TOPIC,
        now=1_800_000_000,
    )


def test_retry_after_reads_seconds_and_http_dates(clock):
    now = clock.now()
    assert retry_after("120", now) == timedelta(seconds=120)
    assert retry_after(format_datetime(now + timedelta(minutes=5), usegmt=True), now) == (
        timedelta(minutes=5)
    )
    assert retry_after(format_datetime(now - timedelta(minutes=5), usegmt=True), now) == (
        timedelta(0)
    )
    assert retry_after("soon", now) is None
    assert retry_after(None, now) is None


def test_retry_after_reads_ascii_digits_only_and_is_bounded(clock):
    now = clock.now()
    for unicode_digits in ("\u0663", "\u00b2", "\uff13\uff10", "1\u0663"):
        assert retry_after(unicode_digits, now) is None  # the policy's backoff then
    assert retry_after("99999999999", now) == RETRY_AFTER_MAX
    assert retry_after("9" * 20, now) == RETRY_AFTER_MAX
    assert retry_after("9" * 21, now) is None
    assert retry_after("7200", now, cap=timedelta(hours=1)) == timedelta(hours=1)
    far = format_datetime(now.replace(year=9999), usegmt=True)
    assert retry_after(far, now) == RETRY_AFTER_MAX
    assert retry_after("Fri, 31 Dec 99999 23:59:59 GMT", now) is None
