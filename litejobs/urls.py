"""The path a URLconf includes for litejobs' views:
``path("litejobs/", include("litejobs.urls"))`` serves report downloads through their signed
links (the admin serves them too). The view lives in ``litejobs.reports.views``."""

from django.urls import path

from .reports.views import download

__all__ = ["download", "urlpatterns"]

app_name = "litejobs"

urlpatterns = [
    path("reports/download/<str:token>", download, name="report-download"),
]
