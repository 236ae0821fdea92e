"""ASGI entry point of the demo project (HTTP now; websockets join with live work queues)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

application = get_asgi_application()
