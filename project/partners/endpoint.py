"""The demo's webhook endpoint: the shop's ``orders.paid`` events go to the partner's view.

``make demo`` calls ``ensure_endpoint`` with the URL its web server answers on, so the
endpoint always points at the running demo (the demo's settings allow its own host in
``LITEJOBS["WEBHOOK_ALLOWED_HOSTS"]`` outside production; a real endpoint would be a public
https URL).
"""

from django.conf import settings

from litejobs.models import WebhookEndpoint
from litejobs.webhooks import create_endpoint

DESCRIPTION = "Demo partner (project.partners)"
TOPICS = ["orders.paid"]


def ensure_endpoint(url: str) -> WebhookEndpoint:
    """Create the demo partner's endpoint, or point the existing one at ``url`` again."""
    endpoint = WebhookEndpoint.objects.filter(description=DESCRIPTION).first()
    if endpoint is None:
        return create_endpoint(
            url, TOPICS, secret=settings.DEMO_WEBHOOK_SECRET, description=DESCRIPTION
        )
    endpoint.url = url
    endpoint.topics = TOPICS
    endpoint.secret = settings.DEMO_WEBHOOK_SECRET
    endpoint.full_clean()
    endpoint.save()
    return endpoint
