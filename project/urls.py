"""URLs of the demo project: the admin is the operator surface; ``/`` is the demo shop;
``/metrics`` the Prometheus endpoint; ``/litejobs/`` litejobs' own views (the reports' signed
downloads)."""

from django.contrib import admin
from django.urls import include, path

from litejobs.views import metrics
from project.orders.views import home
from project.partners.views import receive_webhook

urlpatterns = [
    path("", home, name="home"),
    path("admin/", admin.site.urls),
    path("metrics", metrics, name="metrics"),
    path("litejobs/", include("litejobs.urls")),
    # The demo partner's webhook receiver (another system, in the same project for the demo).
    path("partner/webhooks", receive_webhook, name="partner-webhooks"),
]
