"""The path an ASGI application names for the live work-queue pages' websockets:
``from litejobs.routing import websocket_urlpatterns`` (needs ``litejobs[live]``). The
patterns live in ``litejobs.workqueues.routing``."""

from .workqueues.routing import websocket_path, websocket_urlpatterns

__all__ = ["websocket_path", "websocket_urlpatterns"]
