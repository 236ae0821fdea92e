"""URLs of the test suite: the admin (the operator surface) and the Prometheus endpoint and
litejobs' views (report downloads)."""

from django.contrib import admin
from django.urls import include, path

from litejobs.views import metrics

urlpatterns = [
    path("admin/", admin.site.urls),
    path("metrics", metrics, name="metrics"),
    path("litejobs/", include("litejobs.urls")),
]
