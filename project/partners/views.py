"""The demo partner's webhook endpoint: verify the signature, then record the event once.

This is what a receiver of litejobs webhooks writes: read the raw body, verify it with
``litejobs.webhooks.verify_signature`` and the endpoint's secret before parsing it, answer 400
to anything that does not verify, and deduplicate on the ``Litejobs-Delivery`` header (a
delivery is retried until it is answered 2xx, so the same one may arrive twice).
"""

import json
from datetime import UTC, datetime

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from litejobs import clock
from litejobs.exceptions import SignatureInvalid
from litejobs.webhooks import DELIVERY_HEADER, SIGNATURE_HEADER, verify_signature

from .models import ReceivedWebhook


@csrf_exempt  # a machine-to-machine POST: the signature authenticates it, not a CSRF cookie
@require_POST
def receive_webhook(request):
    """Answer 200 once the delivery is stored (or was already), 400 when it does not verify."""
    body = request.body
    try:
        signed_at = verify_signature(
            settings.DEMO_WEBHOOK_SECRET, request.headers.get(SIGNATURE_HEADER), body
        )
    except SignatureInvalid as error:
        return JsonResponse({"error": error.code}, status=400)
    delivery = request.headers.get(DELIVERY_HEADER, "")
    try:
        event = json.loads(body)
        event_id, topic, data = int(event["id"]), str(event["topic"]), event["data"]
    except (ValueError, KeyError, TypeError):
        return JsonResponse({"error": "body-invalid"}, status=400)
    if not delivery:
        return JsonResponse({"error": "delivery-missing"}, status=400)
    _, created = ReceivedWebhook.objects.get_or_create(
        delivery=delivery[:50],
        defaults={
            "event_id": event_id,
            "topic": topic[:200],
            "data": data,
            "signed_at": datetime.fromtimestamp(signed_at, tz=UTC),
            "received_at": clock.now(),
        },
    )
    return HttpResponse("stored" if created else "duplicate", content_type="text/plain")
