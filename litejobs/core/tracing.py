"""W3C trace context carried from the enqueueing request to the job's run.

``TraceparentMiddleware`` reads the incoming ``traceparent`` header; ``enqueue`` stores the
current value on the job row and the worker restores it around the body, so a trace spans the
request and the work it started (and jobs enqueued by jobs). With OpenTelemetry installed the
current span's context comes first (``litejobs.core.otel``): the enqueue's producer span, the
attempt's consumer span.
"""

import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import Any

from django.http import HttpRequest
from django.http.response import HttpResponseBase

from . import otel

_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")
_current: ContextVar[str] = ContextVar("litejobs_traceparent", default="")


def current_traceparent() -> str:
    """The traceparent in force: the current OpenTelemetry span's, else the one the
    middleware or the worker set, else ``""``."""
    return otel.current_traceparent() or _current.get()


def enqueue_span(name: str, queue: str) -> AbstractContextManager[Any]:
    """With OpenTelemetry, the producer span of enqueueing ``name`` on ``queue`` (a child of
    the current span, else of the middleware's traceparent); else nothing."""
    return otel.producer(name, queue, parent=_current.get())


@contextmanager
def use_traceparent(value: str) -> Iterator[None]:
    """Make ``value`` the current traceparent inside the block (ignored unless well-formed)."""
    token = _current.set(value if _TRACEPARENT.match(value or "") else "")
    try:
        yield
    finally:
        _current.reset(token)


class TraceparentMiddleware:
    """Django middleware: the request's ``traceparent`` header becomes the current one."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        with use_traceparent(request.headers.get("traceparent", "")):
            return self.get_response(request)
