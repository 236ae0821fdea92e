"""URLs of the test suite: the admin (the operator surface) and the Prometheus endpoint."""

from django.contrib import admin
from django.urls import path

from litejobs.views import metrics

urlpatterns = [
    path("admin/", admin.site.urls),
    path("metrics", metrics, name="metrics"),
]
