"""Websocket URL patterns of litejobs' live admin pages other than the work queues' (mounted
together by ``litejobs.routing.websocket_urlpatterns``)."""

from django.urls import path

from .consumers import DashboardConsumer

websocket_urlpatterns = [
    path("ws/litejobs/dashboard/", DashboardConsumer.as_asgi(), name="litejobs-dashboard"),
]
