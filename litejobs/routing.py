"""The path an ASGI application names for litejobs' live admin pages' websockets (the
dashboard, the work queues): ``from litejobs.routing import websocket_urlpatterns`` (needs
``litejobs[live]``). The patterns live in ``litejobs.live.routing`` and
``litejobs.workqueues.routing``."""

from .live.routing import websocket_urlpatterns as _live_pages
from .workqueues.routing import websocket_path
from .workqueues.routing import websocket_urlpatterns as _work_queues

__all__ = ["websocket_path", "websocket_urlpatterns"]

websocket_urlpatterns = [*_live_pages, *_work_queues]
