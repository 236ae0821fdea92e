"""W3C trace context carried from the enqueueing request to the job's run.

``TraceparentMiddleware`` reads the incoming ``traceparent`` header; ``enqueue`` stores the
current value on the job row and the worker restores it around the body, so a trace spans the
request and the work it started (and jobs enqueued by jobs).
"""

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.http import HttpRequest
from django.http.response import HttpResponseBase

_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")
_current: ContextVar[str] = ContextVar("litejobs_traceparent", default="")


def current_traceparent() -> str:
    """The traceparent in force, or ``""``."""
    return _current.get()


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
