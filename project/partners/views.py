"""The demo partner's webhook endpoint: verify the signature, then record the event once.

This is what a receiver of litejobs webhooks writes: read the raw body, verify it with
``litejobs.webhooks.verify_request`` and the endpoint's secret before parsing it, answer 400
to anything that does not verify, and deduplicate on the delivery id the signature vouches for
(a delivery is retried until it is answered 2xx, so the same one may arrive twice; a captured
request replayed under a new ``Litejobs-Delivery`` id does not verify).
"""

import json
from datetime import UTC, datetime

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from litejobs import clock
from litejobs.exceptions import SignatureInvalid
from litejobs.webhooks import verify_request

from .models import ReceivedWebhook


@csrf_exempt  # a machine-to-machine POST: the signature authenticates it, not a CSRF cookie
@require_POST
def receive_webhook(request):
    """Answer 200 once the delivery is stored (or was already), 400 when it does not verify."""
    body = request.body
    try:
        signed = verify_request(settings.DEMO_WEBHOOK_SECRET, request.headers, body)
    except SignatureInvalid as error:
        return JsonResponse({"error": error.code}, status=400)
    try:
        event = json.loads(body)
        event_id, data = int(event["id"]), event["data"]
    except (ValueError, KeyError, TypeError):
        return JsonResponse({"error": "body-invalid"}, status=400)
    _, created = ReceivedWebhook.objects.get_or_create(
        delivery=signed.delivery[:50],
        defaults={
            "event_id": event_id,
            "topic": signed.event,
            "data": data,
            "signed_at": datetime.fromtimestamp(signed.timestamp, tz=UTC),
            "received_at": clock.now(),
        },
    )
    return HttpResponse("stored" if created else "duplicate", content_type="text/plain")
