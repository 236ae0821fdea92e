"""OpenTelemetry spans of litejobs, when ``opentelemetry-api`` is installed (``litejobs[otel]``).

- ``producer``: around an enqueue (kind PRODUCER), a child of whatever span is current (the
  request's, when the project instruments Django); the stored ``traceparent`` is this span's.
- ``consumer``: around each attempt of a job (kind CONSUMER), a child of the stored
  ``traceparent``, so the run joins the trace of the request that enqueued it — on any worker,
  however much later.
- ``step``: around each ``ctx.step.run`` (kind INTERNAL), a child of the attempt's span.

Spans go wherever the project's tracer provider sends them (its exporter, its sampling);
with the API alone they are non-recording and cost next to nothing. Without the package every
helper is an empty context manager: nothing is imported, nothing fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Protocol

from .extras import installed

#: Whether opentelemetry-api can be imported (decided once, at import).
ENABLED = installed("opentelemetry")

if ENABLED:
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    _PROPAGATOR = TraceContextTextMapPropagator()

#: The instrumentation scope of every litejobs span.
SCOPE = "litejobs"
#: The ``messaging.system`` attribute of the producer and consumer spans.
SYSTEM = "litejobs"


def current_traceparent() -> str:
    """The W3C ``traceparent`` of the current OpenTelemetry span, or ``""`` when there is no
    valid one (or no OpenTelemetry)."""
    if not ENABLED:
        return ""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return carrier.get("traceparent", "")


def producer(name: str, queue: str, parent: str = "") -> AbstractContextManager[Any]:
    """The span of enqueueing job(s) ``name`` on ``queue``: a child of the current span, or
    of the ``parent`` traceparent when no span is current (a request's header, read by
    ``TraceparentMiddleware`` in a project that does not instrument Django)."""
    if not ENABLED:
        return nullcontext()
    context = None
    if parent and not trace.get_current_span().get_span_context().is_valid:
        context = _PROPAGATOR.extract({"traceparent": parent})
    return trace.get_tracer(SCOPE).start_as_current_span(
        f"enqueue {name}",
        context=context,
        kind=SpanKind.PRODUCER,
        attributes={
            "messaging.system": SYSTEM,
            "messaging.operation.type": "send",
            "messaging.destination.name": queue,
            "litejobs.job.name": name,
        },
    )


class Attempt(Protocol):
    """What the consumer span names of the attempt it wraps (a worker's claimed job)."""

    id: int
    name: str
    queue: str
    attempt: int
    traceparent: str


def consumer(job: Attempt) -> AbstractContextManager[Any]:
    """The span of one attempt of ``job``, a child of the ``traceparent`` stored when it was
    enqueued (a new trace when none was)."""
    if not ENABLED:
        return nullcontext()
    return _consumer(job)


@contextmanager
def _consumer(job: Attempt) -> Iterator[Any]:
    carrier = {"traceparent": job.traceparent} if job.traceparent else {}
    with trace.get_tracer(SCOPE).start_as_current_span(
        f"run {job.name}",
        context=_PROPAGATOR.extract(carrier),
        kind=SpanKind.CONSUMER,
        attributes={
            "messaging.system": SYSTEM,
            "messaging.operation.type": "process",
            "messaging.destination.name": job.queue,
            "messaging.message.id": str(job.id),
            "litejobs.job.name": job.name,
            "litejobs.job.attempt": job.attempt,
        },
    ) as span:
        yield span


def step(name: str) -> AbstractContextManager[Any]:
    """The span of the step ``name`` of the current attempt."""
    if not ENABLED:
        return nullcontext()
    return trace.get_tracer(SCOPE).start_as_current_span(
        f"step {name}", kind=SpanKind.INTERNAL, attributes={"litejobs.step.name": name}
    )
