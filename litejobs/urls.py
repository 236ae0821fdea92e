"""The path of the URLconf a project includes for the litejobs views served under one prefix:
``path("litejobs/", include("litejobs.urls"))`` serves report downloads through their signed
links (the admin serves them too). The view lives in ``litejobs.reports.views``; the metrics
view, which needs an extra, is routed one by one from ``litejobs.views``."""

from django.urls import path

from .reports.views import download

__all__ = ["download", "urlpatterns"]

app_name = "litejobs"

urlpatterns = [
    path("reports/download/<str:token>", download, name="report-download"),
]
