"""``litejobs.views.metrics``: the Prometheus endpoint; mount it where your scraper looks.

```python
# urls.py
from litejobs.views import metrics
urlpatterns = [..., path("metrics", metrics)]
```

It reads the database on each scrape and needs no login (like most scrape targets); put it
behind your network policy, or wrap it (``staff_member_required(metrics)``) if schedule and
queue names are not for everyone.
"""

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from .metrics import registry


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The litejobs metrics in the Prometheus text format."""
    return HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)
