"""OpenTelemetry spans, with the SDK's in-memory exporter: a producer span at enqueue (a child
of the request's span), a consumer span per attempt that is a child of it through the stored
``traceparent`` — on a worker thread, after the request is gone — and a span per step.
A project without OpenTelemetry gets no span and no import error (tests/processes/
test_no_extras.py runs a worker with it unimportable)."""

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from litejobs.core import otel
from litejobs.models import Job
from litejobs.tracing import use_traceparent
from tests.testapp.jobs import flaky, record, stepped

pytestmark = pytest.mark.django_db(transaction=True)


class _WhileOn(SimpleSpanProcessor):
    """Exports only while a test of this module records: the global provider is set once per
    process, and the tests after these ones should not keep exporting."""

    on = False

    def on_end(self, span) -> None:
        if self.on:
            super().on_end(span)


_EXPORTER = InMemorySpanExporter()
_PROCESSOR = _WhileOn(_EXPORTER)


@pytest.fixture
def spans():
    """The finished spans of the test."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    if not getattr(provider, "_litejobs_test_processor", False):
        provider.add_span_processor(_PROCESSOR)
        provider._litejobs_test_processor = True  # type: ignore[attr-defined]
    _EXPORTER.clear()
    _PROCESSOR.on = True
    yield lambda: list(_EXPORTER.get_finished_spans())
    _PROCESSOR.on = False
    _EXPORTER.clear()


def named(found, name):
    [span] = [span for span in found if span.name == name]
    return span


def test_an_attempt_is_a_child_of_the_enqueue_in_the_request_trace(clock, run_worker, spans):
    assert otel.ENABLED
    tracer = trace.get_tracer("the-project")
    with tracer.start_as_current_span("POST /orders") as request:
        enqueued = stepped.enqueue(label="traced", fail_on=[])
    row = Job.objects.get(pk=enqueued.id)
    run_worker(concurrency=1)

    found = spans()
    producer = named(found, f"enqueue {stepped.name}")
    consumer = named(found, f"run {stepped.name}")
    trace_id = request.get_span_context().trace_id
    assert producer.kind == SpanKind.PRODUCER
    assert producer.parent.span_id == request.get_span_context().span_id
    assert producer.context.trace_id == trace_id
    # The row stores the producer span's context; the attempt continues it.
    assert row.traceparent.startswith(f"00-{trace_id:032x}-{producer.context.span_id:016x}-")
    assert consumer.kind == SpanKind.CONSUMER
    assert consumer.context.trace_id == trace_id
    assert consumer.parent.span_id == producer.context.span_id
    assert consumer.attributes["messaging.message.id"] == str(enqueued.id)
    assert consumer.attributes["litejobs.job.attempt"] == 1
    assert consumer.attributes["messaging.destination.name"] == "default"
    for name in ("one", "two", "three"):
        step = named(found, f"step {name}")
        assert step.parent.span_id == consumer.context.span_id
        assert step.context.trace_id == trace_id


def test_each_attempt_has_its_span_and_a_failure_is_recorded(clock, run_worker, spans):
    enqueued = flaky.enqueue(label="traced", failures=1)
    run_worker(concurrency=1)
    clock.advance("1m")
    run_worker(concurrency=1)
    attempts = [span for span in spans() if span.name == f"run {flaky.name}"]
    assert [span.attributes["litejobs.job.attempt"] for span in attempts] == [1, 2]
    first, second = attempts
    assert first.status.status_code == StatusCode.ERROR
    assert any(event.name == "exception" for event in first.events)
    assert second.status.status_code != StatusCode.ERROR
    # Enqueued outside any span: a new trace begins at the enqueue, and both attempts are in it.
    producer = named(spans(), f"enqueue {flaky.name}")
    assert producer.parent is None
    assert {span.parent.span_id for span in attempts} == {producer.context.span_id}
    assert Job.objects.get(pk=enqueued.id).attempts == 2


def test_a_traceparent_header_without_a_span_parents_the_enqueue(clock, spans):
    # A project that reads the header with TraceparentMiddleware but does not instrument Django.
    header = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with use_traceparent(header):
        enqueued = record.enqueue(label="header", value=1)
    producer = named(spans(), f"enqueue {record.name}")
    assert f"{producer.context.trace_id:032x}" == "0af7651916cd43dd8448eb211c80319c"
    assert f"{producer.parent.span_id:016x}" == "b7ad6b7169203331"
    stored = Job.objects.get(pk=enqueued.id).traceparent
    assert stored.split("-")[1:3] == [
        "0af7651916cd43dd8448eb211c80319c",
        f"{producer.context.span_id:016x}",
    ]
