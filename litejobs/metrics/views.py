"""``litejobs.views.metrics``: the Prometheus endpoint; mount it where your scraper looks.

It needs prometheus-client (``pip install "litejobs[metrics]"``); without it, importing this
module raises ``ImproperlyConfigured`` (``[extra-missing]``) naming that install.

```python
# urls.py
from litejobs.views import metrics
urlpatterns = [..., path("metrics", metrics)]
```

It reads the database on each scrape. It is never anonymous: queue, schedule and endpoint names
and backlogs describe the business, every tenant's together. It answers a signed-in user who
holds ``litejobs.view_metrics`` (superusers, the "litejobs read-only" group; being staff is
not enough: a tenant's report user is staff too), or a scraper that sends
``Authorization: Bearer <LITEJOBS["METRICS_TOKEN"]>`` when that setting is set (Prometheus:
``authorization: {credentials: ...}``). Anyone else gets 401 (403 for a signed-in user without
the permission).
"""

import hmac

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from ..conf import settings
from ..core import extras

# Mounting the view without prometheus-client is a misconfiguration named at startup (the
# URLconf imports this module), not a traceback at the first scrape.
extras.require("metrics", "prometheus_client", "The litejobs metrics view")

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest  # noqa: E402

from .collector import registry  # noqa: E402

#: The realm a 401 names, so a scraper's operator sees what asked for credentials.
REALM = 'Bearer realm="litejobs metrics"'
#: The permission that lets a signed-in user read the metrics.
PERMISSION = "litejobs.view_metrics"


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The litejobs metrics in the Prometheus text format, for ``litejobs.view_metrics`` or
    the bearer token."""
    refusal = _refusal(request)
    if refusal is not None:
        return refusal
    return HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)


def _refusal(request: HttpRequest) -> HttpResponse | None:
    """Why this request may not read the metrics (a response), or ``None`` when it may."""
    token = settings.metrics_token()
    header = request.headers.get("Authorization", "")
    if token and header:
        scheme, _, given = header.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(
            given.strip().encode(), token.encode()
        ):
            return None
        return _unauthorized("The bearer token does not match LITEJOBS['METRICS_TOKEN'].")
    user = getattr(request, "user", None)
    if user is not None and user.is_active and user.has_perm(PERMISSION):
        return None
    if user is not None and user.is_authenticated:
        return HttpResponse(
            "The metrics describe every queue and tenant: they are for users with the "
            f"permission {PERMISSION} ('Can read the litejobs metrics'), or a scraper with the "
            "bearer token.\n",
            status=403,
            content_type="text/plain",
        )
    how = f"Sign in as a user with the permission {PERMISSION}"
    if token:
        how += ", or send Authorization: Bearer <LITEJOBS['METRICS_TOKEN']>"
    return _unauthorized(f"{how}.")


def _unauthorized(message: str) -> HttpResponse:
    response = HttpResponse(message + "\n", status=401, content_type="text/plain")
    response["WWW-Authenticate"] = REALM
    return response
