"""The path ``MIDDLEWARE`` names: ``litejobs.tracing.TraceparentMiddleware`` (the trace
context of the request a job is enqueued in). The code lives in ``litejobs.core.tracing``."""

from .core.tracing import TraceparentMiddleware, current_traceparent, use_traceparent

__all__ = ["TraceparentMiddleware", "current_traceparent", "use_traceparent"]
