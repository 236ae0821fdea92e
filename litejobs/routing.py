"""Moved to ``litejobs.contrib.workqueues.routing``; this path keeps working (the websocket
URL patterns of the live work-queue pages; needs ``litejobs[live]``)."""

from .contrib.workqueues.routing import websocket_path, websocket_urlpatterns

__all__ = ["websocket_path", "websocket_urlpatterns"]
