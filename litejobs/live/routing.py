"""Websocket URL patterns of litejobs' live admin pages other than the work queues' (mounted
together by ``litejobs.routing.websocket_urlpatterns``)."""

from django.urls import path

from .sockets import DashboardSocket

websocket_urlpatterns = [
    path("ws/litejobs/dashboard/", DashboardSocket.as_asgi(), name="litejobs-dashboard"),
]
