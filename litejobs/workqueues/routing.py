"""Websocket URL patterns of litejobs: include them in your ASGI application.

::

    # asgi.py
    from channels.auth import AuthMiddlewareStack
    from channels.routing import ProtocolTypeRouter, URLRouter
    from channels.security.websocket import AllowedHostsOriginValidator
    from django.core.asgi import get_asgi_application

    django_application = get_asgi_application()
    from litejobs.routing import websocket_urlpatterns  # after Django is set up

    application = ProtocolTypeRouter({
        "http": django_application,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    })

The queue pages connect to ``/ws/litejobs/workqueues/<queue>/`` (``websocket_path``); the face
``litejobs.routing`` adds the dashboard's (``litejobs.live.routing``). Mount the patterns at
the root of your websocket router.
"""

from django.urls import path

from .live import websocket_path
from .sockets import WorkQueueSocket

__all__ = ["websocket_path", "websocket_urlpatterns"]

websocket_urlpatterns = [
    path(
        "ws/litejobs/workqueues/<str:queue>/",
        WorkQueueSocket.as_asgi(),
        name="litejobs-workqueue",
    ),
]
