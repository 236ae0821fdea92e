"""Delivering webhooks: the relay's publisher and the delivery job.

The relay creates one delivery record and one delivery job per (endpoint, message) for every
enabled endpoint whose topics and tenant match a published message, in the transaction that
publishes it (``publish_deliveries``, registered with the relay). The job (``deliver``,
``litejobs.webhook_delivery``) POSTs the event as JSON, signed (``signing``), to the checked
address (``transport``). A 2xx answer is a success and resets the endpoint's failure streak.
Anything else (another status, a timeout, a refused connection) is a failed attempt: it is
retried with the ``WEBHOOK_RETRY`` backoff, or when the answer says ``Retry-After``, then;
after ``WEBHOOK_MAX_FAILURES`` consecutive failed attempts the endpoint is disabled.
"""

from __future__ import annotations

import http.client
import json
import logging
import socket
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NoReturn

from django.db import connections, transaction
from django.db.models import F, QuerySet

from .. import __version__
from ..conf import settings
from ..core import clock
from ..core.durations import format_duration, parse_duration
from ..core.enums import DeliveryState
from ..core.payloads import display_url, dumps, scrub
from ..core.retry import Retry
from ..exceptions import Cancelled, Permanent, RetryAfter, WebhookError
from ..jobs import catalog, queues
from ..jobs.context import JobContext
from ..jobs.declarations import job, queue_name
from ..jobs.enqueue import PreparedRow, insert_many
from ..models import WebhookDelivery, WebhookEndpoint
from ..models.webhooks import resolve
from ..outbox import operations as outbox_operations
from ..outbox import relay
from ..outbox.declarations import carried_fields
from ..outbox.staging import StagedRow
from ..sql.cursors import fetch_all, hot_cursor, run_query
from .signing import DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, sign
from .transport import ANSWER_KEPT, Answer, post, retry_after

logger = logging.getLogger(__name__)


#: Content types an answer's record names; any other reads "another content type" (a header
#: is the receiver's text too).
_KNOWN_TYPES = frozenset(
    {
        "application/json",
        "application/problem+json",
        "application/xml",
        "application/octet-stream",
        "text/plain",
        "text/html",
        "text/xml",
    }
)


def _describe(error: BaseException, sensitive: bool) -> str:
    """A failed request's exception as the attempt records it. When the topic has sensitive
    fields, only litejobs' and the operating system's texts are kept: an HTTP parsing error
    quotes what the receiver sent (its status line, a header), which may echo them."""
    if isinstance(error, WebhookError):
        message: str = error.args[0]
        return message
    if isinstance(error, TimeoutError | socket.timeout):
        return "no answer within LITEJOBS['WEBHOOK_TIMEOUT']"
    if sensitive and not isinstance(error, OSError):
        return f"{type(error).__name__} (its text is not kept: the topic has sensitive fields)"
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:ANSWER_KEPT]


def _answered(answer: Answer, sensitive: bool) -> str:
    """A failed attempt's answer as the attempt records it. When the topic has sensitive
    fields, only what cannot carry their values (status, length, a known content type): a
    receiver may echo them escaped, encoded, re-cased or cut anywhere, which no scrubbing of
    the body can recognise."""
    if not sensitive:
        return f"HTTP {answer.status}" + (f": {answer.text}" if answer.text else "")
    media = answer.content_type.partition(";")[0].strip().lower()
    kind = media if media in _KNOWN_TYPES else "another content type" if media else "no type"
    return (
        f"HTTP {answer.status} ({answer.length} bytes, {kind}; the answer is not kept: the "
        "topic has sensitive fields)"
    )


# Read at import, so an invalid value falls back to its default here (litejobs.E020 reports it).
_RETRY = settings.or_default("WEBHOOK_RETRY", Retry.coerce)
#: The job's timeout (fixed at declaration): the request's, plus time to record the attempt.
_JOB_TIMEOUT = settings.or_default(
    "WEBHOOK_TIMEOUT", lambda value: parse_duration(value, name="WEBHOOK_TIMEOUT", allow_zero=False)
) + timedelta(seconds=5)


@job(
    name="litejobs.webhook_delivery",
    queue=settings.or_default("WEBHOOK_QUEUE", queue_name),
    key=lambda endpoint_id, message_id: f"webhook:{endpoint_id}:{message_id}",
    tenant=lambda tenant: tenant or None,
    retry=_RETRY,
    timeout=_JOB_TIMEOUT,
    # Each attempt's record (and the endpoint's failure streak) commits even when it fails.
    atomic=False,
)
def deliver(
    ctx: JobContext,
    delivery_id: int,
    endpoint_id: int,
    message_id: int,
    topic: str,
    key: str,
    tenant: str,
    created_at: str,
    payload: dict[str, Any],
) -> dict[str, Any]:
    """POST one published message to one endpoint, signed; record the attempt.

    The attempt is recorded before the request as one without an answer, so an attempt that
    never reports back (abandoned past its timeout, its worker killed) still reads so and counts
    toward the endpoint's failures when the next attempt starts; an attempt whose run stopped
    meanwhile (timed out, cancelled, its claim lost) writes nothing after the request.
    """
    now = clock.now()
    endpoint = _begin(ctx, delivery_id, endpoint_id, now)
    if isinstance(endpoint, str):
        return {"skipped": endpoint}
    body = dumps(
        {
            "id": message_id,
            "topic": topic,
            "key": key or None,
            "created_at": created_at,
            "data": payload,
        }
    ).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": f"litejobs/{__version__}",
        SIGNATURE_HEADER: sign(
            endpoint.secret, body, int(now.timestamp()), delivery=delivery_id, event=topic
        ),
        EVENT_HEADER: topic,
        DELIVERY_HEADER: str(delivery_id),
    }
    # An answer may echo the event: its topic's sensitive fields are never recorded or logged.
    fields = carried_fields({"topic": topic})
    started = time.monotonic()
    attempt = _request(endpoint.url, body, headers, sensitive=bool(fields))
    if ctx.cancel_reason is not None:
        raise Cancelled(ctx.cancel_reason)  # the run is over: its answer is not recorded
    elapsed_ms = (time.monotonic() - started) * 1000
    answer = attempt.answer
    delivery = WebhookDelivery.objects.using(settings.DATABASE).filter(pk=delivery_id)
    if answer is not None and 200 <= answer.status < 300:
        _succeeded(endpoint, delivery, ctx.job_id, answer.status, clock.now())
        logger.info(
            "webhook delivered delivery=%s endpoint=%s topic=%s status=%s duration_ms=%.1f",
            delivery_id,
            endpoint_id,
            topic,
            answer.status,
            elapsed_ms,
        )
        return {"status": answer.status}
    _failed_attempt(
        ctx,
        endpoint,
        delivery_id,
        attempt,
        now,
        lambda text: scrub(text, {"payload": payload}, fields),
    )


@dataclass(frozen=True)
class _Attempt:
    """What one request came to: the receiver's answer, or why there is none."""

    answer: Answer | None
    #: The answer, or why there is none, as a failed attempt records it.
    failure: str = ""
    #: The address is refused or invalid: retrying cannot help.
    permanent: bool = False


def _request(url: str, body: bytes, headers: dict[str, str], *, sensitive: bool) -> _Attempt:
    """POST to the endpoint's checked address within ``WEBHOOK_TIMEOUT`` overall; what it
    came to is described as ``sensitive`` allows (``_describe``, ``_answered``)."""
    try:
        # DNS may have changed since the endpoint was saved
        target = resolve(url, settings.WEBHOOK_ALLOWED_HOSTS)
        deadline = min(settings.duration("WEBHOOK_TIMEOUT"), _JOB_TIMEOUT)
        answer = post(target, body, headers, deadline.total_seconds())
    except WebhookError as error:
        permanent = error.code in ("webhook-address-refused", "webhook-url-invalid")
        return _Attempt(None, _describe(error, sensitive), permanent)
    except (OSError, http.client.HTTPException, ssl.SSLError, ValueError) as error:
        return _Attempt(None, _describe(error, sensitive))
    return _Attempt(answer, _answered(answer, sensitive))


def _failed_attempt(
    ctx: JobContext,
    endpoint: WebhookEndpoint,
    delivery_id: int,
    attempt: _Attempt,
    now: datetime,
    hide: Callable[[str], str],
) -> NoReturn:
    """Record a failed attempt (its text through ``hide``, which blanks the event's sensitive
    values) and raise what the job's retry policy reads."""
    delivery = WebhookDelivery.objects.using(settings.DATABASE).filter(pk=delivery_id)
    answer = attempt.answer
    wait = None
    if answer is not None:
        # Retry parsed max into a timedelta.
        wait = retry_after(answer.retry_after, now, cap=deliver.retry.max)
    failure = hide(attempt.failure)
    disabled = _failed(
        endpoint,
        delivery,
        ctx,
        status=answer.status if answer is not None else None,
        failure=failure,
        final=attempt.permanent or ctx.final_attempt,
        now=clock.now(),
    )
    logger.warning(
        "webhook failed delivery=%s endpoint=%s url=%s attempt=%s error=%s%s",
        delivery_id,
        endpoint.pk,
        display_url(endpoint.url),
        ctx.attempt,
        failure[:200],
        f" retry_after={format_duration(wait)}" if wait is not None else "",
    )
    if disabled:
        raise Permanent(disabled)
    if attempt.permanent:
        raise Permanent(failure)
    if wait is not None:
        raise RetryAfter(wait, f"{failure} (the receiver asked to retry after {wait})")
    raise WebhookError(failure, code="webhook-delivery-failed")


#: What an attempt that has not reported back reads as (abandoned past its timeout, or its
#: worker stopped before it could record the answer).
NO_ANSWER = (
    "No answer recorded: the attempt did not finish within its job's timeout (or its worker "
    "stopped first)."
)


def _begin(
    ctx: JobContext, delivery_id: int, endpoint_id: int, now: datetime
) -> WebhookEndpoint | str:
    """Start an attempt: count earlier attempts that never reported back as failures of the
    endpoint, then record this one as unanswered. When the endpoint is gone or was disabled,
    answers why nothing is sent; when the earlier attempts disable it, ``Permanent``."""
    alias = settings.DATABASE
    with transaction.atomic(using=alias):
        endpoint = (
            WebhookEndpoint.objects.using(alias).select_for_update().filter(pk=endpoint_id).first()
        )
        delivery = WebhookDelivery.objects.using(alias).filter(pk=delivery_id)
        record = delivery.values("attempts").first()
        if endpoint is None or record is None:  # deleted: its deliveries went with it
            return "endpoint deleted"
        if not endpoint.enabled:
            delivery.update(
                state=DeliveryState.SKIPPED,
                job_id=ctx.job_id,
                last_error=f"Not sent: the endpoint is disabled ({endpoint.disabled_reason}).",
                finished_at=now,
            )
            return "endpoint disabled"
        unanswered = max(0, ctx.attempt - 1 - record["attempts"])
        if unanswered:
            _count_failures(endpoint, unanswered, NO_ANSWER, now)
        if not endpoint.enabled:  # disabled by those attempts
            delivery.update(
                state=DeliveryState.DEAD,
                job_id=ctx.job_id,
                attempts=F("attempts") + unanswered,
                last_error=NO_ANSWER,
                finished_at=now,
            )
            raise Permanent(
                f"Webhook endpoint {endpoint.pk} was disabled after "
                f"{endpoint.consecutive_failures} consecutive failed attempts (the last: "
                "no answer within the timeout)."
            )
        delivery.update(
            state=DeliveryState.DEAD if ctx.final_attempt else DeliveryState.FAILED,
            job_id=ctx.job_id,
            attempts=F("attempts") + unanswered,
            last_status=None,
            last_error=NO_ANSWER,
            last_attempt_at=now,
            finished_at=now if ctx.final_attempt else None,
        )
    return endpoint


def _count_failures(endpoint: WebhookEndpoint, count: int, failure: str, now: datetime) -> None:
    """Add ``count`` failed attempts to the locked endpoint's streak and save it, disabling it
    once the streak reaches ``WEBHOOK_MAX_FAILURES``."""
    limit = int(settings.WEBHOOK_MAX_FAILURES)
    endpoint.consecutive_failures += count
    endpoint.failing_since = endpoint.failing_since or now
    fields = ["consecutive_failures", "failing_since"]
    if endpoint.enabled and endpoint.consecutive_failures >= limit:
        endpoint.enabled = False
        endpoint.disabled_at = now
        endpoint.disabled_by = "litejobs"
        endpoint.disabled_reason = (
            f"{endpoint.consecutive_failures} consecutive failed delivery attempts since "
            f"{endpoint.failing_since.isoformat()} (the last: {failure[:300]}). Fix the "
            "receiver, then enable the endpoint."
        )
        fields += ["enabled", "disabled_at", "disabled_by", "disabled_reason"]
        logger.error(
            "webhook endpoint disabled id=%s url=%s failures=%s",
            endpoint.pk,
            display_url(endpoint.url),
            endpoint.consecutive_failures,
        )
    endpoint.save(using=settings.DATABASE, update_fields=fields)


def _succeeded(
    endpoint: WebhookEndpoint,
    delivery: QuerySet[WebhookDelivery],
    job_id: int,
    status: int,
    now: datetime,
) -> None:
    with transaction.atomic(using=settings.DATABASE):
        delivery.update(
            state=DeliveryState.DELIVERED,
            job_id=job_id,
            attempts=F("attempts") + 1,
            last_status=status,
            last_error="",
            last_attempt_at=now,
            delivered_at=now,
            finished_at=now,
        )
        WebhookEndpoint.objects.using(settings.DATABASE).filter(pk=endpoint.pk).update(
            consecutive_failures=0, failing_since=None, last_success_at=now
        )


def _failed(
    endpoint: WebhookEndpoint,
    delivery: QuerySet[WebhookDelivery],
    ctx: JobContext,
    *,
    status: int | None,
    failure: str,
    final: bool,
    now: datetime,
) -> str | None:
    """Record a failed attempt. When the endpoint is disabled now (by this failure, another,
    or an operator meanwhile), answers why, and this delivery ends."""
    with transaction.atomic(using=settings.DATABASE):
        row = (
            WebhookEndpoint.objects.using(settings.DATABASE)
            .select_for_update()
            .filter(pk=endpoint.pk)
            .first()
        )
        if row is None:
            return None
        was_enabled = row.enabled
        _count_failures(row, 1, failure, now)
        final = final or not row.enabled
        delivery.update(
            state=DeliveryState.DEAD if final else DeliveryState.FAILED,
            job_id=ctx.job_id,
            attempts=F("attempts") + 1,
            last_status=status,
            last_error=failure[: ANSWER_KEPT + 100],
            last_attempt_at=now,
            finished_at=now if final else None,
        )
    if row.enabled:
        return None
    if was_enabled:
        return (
            f"Webhook endpoint {row.pk} was disabled after {row.consecutive_failures} "
            f"consecutive failed attempts (last: {failure[:300]})."
        )
    return f"Webhook endpoint {row.pk} is disabled: {row.disabled_reason}"


def _delivery_queue() -> list[tuple[str, str]]:
    """The queue of delivery jobs, for the queue checks (``queue-unused``)."""
    return [(str(settings.WEBHOOK_QUEUE), "LITEJOBS['WEBHOOK_QUEUE']")]


@dataclass(frozen=True)
class _Endpoint:
    """An enabled endpoint as a batch is matched against it."""

    id: int
    tenant: str
    topics: frozenset[str]

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> _Endpoint:
        topics = json.loads(row["topics"]) if isinstance(row["topics"], str) else row["topics"]
        return cls(row["id"], row["tenant"], frozenset(topics or ()))

    def receives(self, topic: str, tenant: str) -> bool:
        """As ``WebhookEndpoint.receives``: its tenant, and its topics or ``*``."""
        return self.tenant == tenant and (topic in self.topics or "*" in self.topics)


def publish_deliveries(messages: list[StagedRow], now: datetime) -> int:
    """The relay's publisher of webhooks, in the transaction that publishes ``messages``: one
    delivery record per (enabled endpoint, message) it wants, then one ``enqueue_many`` of
    their delivery jobs; answers how many deliveries it created (a message published again
    finds its records and creates nothing)."""
    with hot_cursor(connections[settings.DATABASE]) as cursor:
        run_query(cursor, "webhook_endpoints_enabled", {})
        endpoints = [_Endpoint.from_row(row) for row in fetch_all(cursor)]
        wanted = [
            (endpoint, message)
            for message in messages
            for endpoint in endpoints
            if endpoint.receives(message.topic, message.tenant)
        ]
        if not wanted:
            return 0
        run_query(
            cursor,
            "webhook_deliveries_create",
            {
                "endpoints": [endpoint.id for endpoint, _ in wanted],
                "messages": [message.id for _, message in wanted],
                "topics": [message.topic for _, message in wanted],
                "now": now,
            },
        )
        created = {(r["endpoint_id"], r["message_id"]): r["id"] for r in fetch_all(cursor)}
    rows = []
    for endpoint, message in wanted:
        delivery_id = created.get((endpoint.id, message.id))
        if delivery_id is None:
            continue  # recorded (and its job enqueued) by an earlier publish
        envelope = message.envelope(delivery_id=delivery_id, endpoint_id=endpoint.id)
        rows.append(
            PreparedRow(f"webhook:{endpoint.id}:{message.id}", endpoint.tenant, envelope, None)
        )
    if rows:
        insert_many(deliver, rows, (now, now), deliver.priority)
    return len(rows)


queues.queue_users.register("webhooks", _delivery_queue)
catalog.redactions.register(deliver.name, carried_fields)
relay.publishers.register("webhooks", publish_deliveries)
outbox_operations.retained.register("deliveries", "webhook_delivery_purge")
