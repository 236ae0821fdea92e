"""The bench's own job declarations: no-op bodies, so the figures measure litejobs alone.

Imported by the bench and by its worker processes only (never autodiscovered), so they never
appear in a project's real worker.
"""

import time

from ..jobs.context import JobContext
from ..jobs.declarations import job
from ..jobs.ratelimits import MAX_LIMIT, Rate
from ..outbox import subscriber
from ..outbox.declarations import Message

#: Every bench job runs in this queue of the scratch database.
QUEUE = "litejobs-bench"


@job(name="litejobs.bench.noop", queue=QUEUE, key=lambda n: f"noop:{n}")
def noop(ctx: JobContext, n: int) -> None:
    """Does nothing, in its own transaction with its fenced completion (atomic, the default)."""


@job(name="litejobs.bench.noop_unfenced", queue=QUEUE, key=lambda n: f"unfenced:{n}", atomic=False)
def noop_unfenced(ctx: JobContext, n: int) -> None:
    """Does nothing; its completion joins the worker's batched acknowledgement."""


#: W3's binding fleet rate: starts per second across every worker.
FLEET_RATE = 500


@job(
    name="litejobs.bench.noop_roomy",
    queue=QUEUE,
    key=lambda n: f"roomy:{n}",
    rate=Rate(limit=MAX_LIMIT, per="1s"),
)
def noop_roomy(ctx: JobContext, n: int) -> None:
    """Does nothing, under a rate far above any drain rate (it never binds)."""


@job(
    name="litejobs.bench.noop_fleet_rate",
    queue=QUEUE,
    key=lambda n: f"fleet-rate:{n}",
    rate=Rate(limit=FLEET_RATE, per="1s"),
)
def noop_fleet_rate(ctx: JobContext, n: int) -> None:
    """Does nothing, at most ``FLEET_RATE`` starts in any second across the fleet."""


#: Steps in each of W7's durable jobs.
STEPS = 5


@job(name="litejobs.bench.five_steps", queue=QUEUE, key=lambda n: f"steps:{n}", atomic=False)
def five_steps(ctx: JobContext, n: int) -> None:
    """W7: five durable no-op steps, each recorded (fenced) in its own transaction."""
    for number in range(STEPS):
        ctx.step.run(f"step-{number}", _nothing)


def _nothing() -> None:
    """A step that does nothing, so W7 measures the step records alone."""


@job(name="litejobs.bench.pickup", queue=QUEUE, key=lambda n: f"pickup:{n}")
def pickup(ctx: JobContext, n: int, sent: float) -> float:
    """Answers when the body started; ``sent`` is when the enqueue began (W4's two ends)."""
    # A measurement, not product code: the enqueuing process stamped ``sent`` with time.time().
    return time.time()


@job(name="litejobs.bench.delayed", queue=QUEUE, key=lambda n: f"delayed:{n}")
def delayed(ctx: JobContext, n: int, due: float) -> float:
    """Answers when the body started; ``due`` is its run_at as Unix time (W10's two ends)."""
    # A measurement, not product code: the worker's time.time() beside the run_at it waited for.
    return time.time()


@job(
    name="litejobs.bench.batch_done",
    queue=QUEUE,
    key=lambda batch_id, done, dead, cancelled: f"batch-done:{batch_id}",
)
def batch_done(ctx: JobContext, batch_id: int, done: int, dead: int, cancelled: int) -> float:
    """W14's batch callback: answers when its body started."""
    # A measurement, not product code: beside the children's finished_at, on the same host.
    return time.time()


@subscriber("litejobs.bench.paid", name="litejobs.bench.on_paid", queue=QUEUE)
def on_paid(ctx: JobContext, message: Message) -> None:
    """W8's subscriber: the relay publishes each staged message to it (it never runs there)."""
