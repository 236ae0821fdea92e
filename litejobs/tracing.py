"""Moved to ``litejobs.core.tracing``; this path keeps working (``TraceparentMiddleware`` in
``MIDDLEWARE``)."""

from .core.tracing import TraceparentMiddleware, current_traceparent, use_traceparent

__all__ = ["TraceparentMiddleware", "current_traceparent", "use_traceparent"]
