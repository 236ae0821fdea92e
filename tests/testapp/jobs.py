"""Jobs the test suite runs, in-process and in real worker processes."""

import os
import time
from pathlib import Path

from litejobs import Concurrency, Permanent, Rate, Retry, RetryAfter, WaitTimedOut, event, job
from litejobs.workflows import Compensation, Step, use_case, workflow

from . import hooked  # noqa: F401 - its jobs register themselves
from .models import Mark


@job(key=lambda label, value=0: f"record:{label}:{value}")
def record(ctx, label: str, value: int = 0) -> int:
    """Write one Mark in the job's transaction; answers the value."""
    Mark.objects.create(label=label, value=value)
    return value


@job(key=lambda label: f"nonatomic:{label}", atomic=False)
def record_unfenced(ctx, label: str) -> None:
    """An atomic=False body: its write commits at once, before the batched acknowledgement."""
    Mark.objects.create(label=label, value=ctx.attempt)


@job(
    key=lambda label, failures: f"flaky:{label}",
    retry=Retry(attempts=4, backoff="exponential", base="10s", max="1h", jitter="none"),
)
def flaky(ctx, label: str, failures: int) -> None:
    """Fails its first ``failures`` attempts, then succeeds."""
    Mark.objects.create(label=label, value=ctx.attempt)
    if ctx.attempt <= failures:
        raise RuntimeError(f"flaky failure {ctx.attempt}")


@job(key=lambda label: f"permanent:{label}", retry=Retry(attempts=5))
def gives_up(ctx, label: str) -> None:
    raise Permanent(f"cannot ever work: {label}")


@job(key=lambda label: f"lookup:{label}", retry=Retry(attempts=5, give_up_on=(LookupError,)))
def looks_up(ctx, label: str) -> None:
    raise KeyError(label)


@job(key=lambda: "charge", sensitive=("card_number",), retry=1)
def charge_card(ctx, card_number: str) -> None:
    raise ValueError(f"card {card_number} declined")


@job(key=lambda label: f"slow:{label}", timeout="1s", retry=Retry(attempts=2, base="1s"))
def cooperative_slow(ctx, label: str) -> None:
    """Runs until cancelled, checking between steps."""
    Mark.objects.create(label=label, value=ctx.attempt)
    for _ in range(500):
        ctx.check_cancelled()
        time.sleep(0.01)


@job(key=lambda label: f"stubborn:{label}", timeout="1s", retry=1)
def stubborn(ctx, label: str, seconds: float = 3.0) -> None:
    """Ignores its cancellation for ``seconds``, then writes and returns."""
    time.sleep(seconds)
    Mark.objects.create(label=label)


#: The database session each ``holds_its_session`` run wrote on, by label.
SESSIONS: dict[str, int] = {}


@job(key=lambda label: f"holds-session:{label}", timeout="1s", retry=1)
def holds_its_session(ctx, label: str, seconds: float = 4.0) -> None:
    """Writes (its transaction open, the row locked), then ignores its cancellation."""
    from django.db import connection

    Mark.objects.create(label=label)
    SESSIONS[label] = connection.connection.info.backend_pid
    time.sleep(seconds)


@job(
    key=lambda label: f"overruns:{label}",
    timeout="1s",
    retry=Retry(attempts=2, base="1m", jitter="none"),
)
def overruns(ctx, label: str, seconds: float = 1.6) -> None:
    """Writes, then outlives its timeout without checking its cancellation (within the grace)."""
    Mark.objects.create(label=label, value=ctx.attempt)
    time.sleep(seconds)


@job(
    key=lambda label: f"overruns-unfenced:{label}",
    timeout="1s",
    retry=Retry(attempts=2, base="1m", jitter="none"),
    atomic=False,
)
def overruns_unfenced(ctx, label: str, seconds: float = 1.6) -> None:
    """``overruns`` whose writes commit as they go."""
    Mark.objects.create(label=label, value=ctx.attempt)
    time.sleep(seconds)


@job(key=lambda label: f"limited:{label}", concurrency=1, timeout="30s")
def limited(ctx, label: str, seconds: float = 0.2) -> None:
    """At most one runs at a time fleet-wide; records overlapping runs."""
    Mark.objects.create(label=f"{label}:start", value=os.getpid())
    time.sleep(seconds)
    Mark.objects.create(label=f"{label}:end", value=os.getpid())


@job(
    atomic=False,  # marks commit as they are written, so their ids show the overlap
    key=lambda account, label: f"per-account:{account}:{label}",
    concurrency=Concurrency(key=lambda account: f"account:{account}", limit=2),
)
def per_account(ctx, account: str, label: str) -> None:
    """At most two run at once per account; start and end marks show the overlap."""
    Mark.objects.create(label=f"{account}:start")
    time.sleep(0.15)
    Mark.objects.create(label=f"{account}:end")


@job(key=lambda n: f"rated:{n}", rate=Rate(limit=5, per="1s"))
def rated(ctx, n: int) -> None:
    """At most five start in any second, fleet-wide (one bucket for the declaration)."""


@job(
    key=lambda account, n: f"partner:{account}:{n}",
    rate=Rate(limit=2, per="10s", key=lambda account: f"partner:{account}"),
    concurrency=Concurrency(key=lambda account: f"partner-calls:{account}", limit=5),
)
def partner_call(ctx, account: str, n: int) -> None:
    """At most two start in any ten seconds per account, five at once."""


@job(key=lambda label, gate: f"gated:{label}", timeout="2m", retry=Retry(attempts=3, base="1s"))
def gated(ctx, label: str, gate: str) -> None:
    """Writes a Mark, announces it started (a file), then waits until the gate file exists.

    Used to kill a worker mid-job: the Mark is in the job's uncommitted transaction.
    """
    Mark.objects.create(label=label, value=ctx.attempt)
    Path(f"{gate}.started.{ctx.attempt}").write_text(str(os.getpid()))
    while not Path(gate).exists():
        ctx.check_cancelled()
        time.sleep(0.02)


@job(key=lambda label, gate: f"gated-unfenced:{label}", atomic=False, retry=Retry(attempts=3))
def gated_unfenced(ctx, label: str, gate: str) -> None:
    """atomic=False: writes (committed at once), announces it finished its body."""
    Mark.objects.create(label=label, value=ctx.attempt)
    Path(f"{gate}.done.{ctx.attempt}").write_text(str(os.getpid()))


@job(key=lambda label, gate: f"gated-outside:{label}", retry=Retry(attempts=3))
def gated_outside(ctx, label: str, gate: str) -> None:
    """Atomic, but its effect is outside the database (a file): it sends no statement."""
    Path(f"{gate}.done.{ctx.attempt}").write_text(str(os.getpid()))


@job(
    key=lambda label, fail_first="": f"stamped:{label}",
    retry=Retry(attempts=2, backoff="fixed", base="2s", jitter="none"),
)
def stamped(ctx, label: str, fail_first: str = "") -> None:
    """Records when its body started (Unix time, in the Mark's note); with ``fail_first``,
    its first attempt fails (``error``: the retry policy; ``retry_after``: RetryAfter 1.5s)."""
    started = time.time()
    if ctx.attempt == 1 and fail_first == "error":
        raise RuntimeError("first attempt fails")
    if ctx.attempt == 1 and fail_first == "retry_after":
        raise RetryAfter("1.5s")
    Mark.objects.create(label=label, value=ctx.attempt, note=repr(started))


@job(key=lambda label, seconds: f"held-for:{label}", timeout="1m", retry=Retry(attempts=2))
def held_for(ctx, label: str, seconds: float) -> None:
    """Runs ``seconds`` (waiting on its cancellation, never time.sleep: see faketime), then
    writes a Mark with its process id."""
    if ctx.cancelled.wait(seconds):
        ctx.check_cancelled()
    Mark.objects.create(label=label, value=os.getpid())


@job(queue="emails", key=lambda address: f"email:{address}")
def send_email(ctx, address: str) -> None:
    """A job of the ``emails`` queue (the queue the CLI, checks and startup tests name)."""
    Mark.objects.create(label=f"email:{address}")


@job(key=lambda day: f"reconcile:{day}", timeout="2s")
def reconcile(ctx, day: str) -> str:
    """The manual job of ``schedules.py``: records the day it reconciled."""
    Mark.objects.create(label=f"reconcile:{day}")
    return day


@job(key=lambda label: f"progress:{label}")
def reports_progress(ctx, label: str) -> None:
    ctx.progress(5, 10, note="halfway")
    time.sleep(1.2)
    ctx.progress(10, 10, note="done")


@job(key=lambda n: f"noop:{n}")
def noop(ctx, n: int) -> None:
    """Does nothing (throughput tests)."""


@job(key=lambda label: f"after-commit:{label}")
def marks_after_commit(ctx, label: str) -> None:
    """Sends no statement, but asks for a mark once its transaction commits."""
    from django.db import transaction

    from litejobs.models import Job

    def mark() -> None:
        state = Job.objects.get(pk=ctx.job_id).state
        Mark.objects.create(label=f"{label}:{state}")

    transaction.on_commit(mark)


@job(key=lambda label: f"loses-claim:{label}")
def loses_its_claim(ctx, label: str) -> None:
    """Sends nothing on its own connection; another claim takes its job meanwhile."""
    from litejobs.runtime.listening import connect

    with connect("default") as other:
        other.execute(
            "UPDATE litejobs_job SET fence = nextval('litejobs_fence') WHERE id = %s",
            [ctx.job_id],
        )


@job(key=lambda label, value: f"slow-record:{label}:{value}", timeout="30s")
def slow_record(ctx, label: str, value: int, seconds: float = 0.1) -> None:
    """Sleeps, then writes one Mark in the job's transaction."""
    time.sleep(seconds)
    Mark.objects.create(label=label, value=value)


@job(key=lambda: "tick", timeout="1s")
def tick(ctx) -> str:
    """The per-second schedule of the two-scheduler test: one Mark per run, by instant."""
    Mark.objects.create(label=f"tick:{ctx.occurrence.scheduled_for.isoformat()}", value=os.getpid())
    return ctx.key


@job(key=lambda label="": f"scheduled:{label}", timeout="5s")
def scheduled_mark(ctx, label: str = "", fail: bool = False) -> str:
    """Writes a Mark naming the occurrence it runs (and its attempt); fails when told to."""
    occurrence = ctx.occurrence
    when = occurrence.scheduled_for.isoformat() if occurrence else "manual"
    Mark.objects.create(label=f"{label}@{when}", value=ctx.attempt, note=ctx.key)
    if fail:
        raise RuntimeError(f"scheduled failure at {when}")
    return when


@job(key=lambda label="": f"occupied:{label}", timeout="10s", atomic=False)
def occupied(ctx, label: str = "", seconds: float = 0.2) -> None:
    """Marks its start and end (committed at once) so tests can see overlapping runs."""
    Mark.objects.create(label=f"{label}:start")
    time.sleep(seconds)
    Mark.objects.create(label=f"{label}:end")


# Durable steps ------------------------------------------------------------------------------

event("test.settled", "a payment settled (tests)")


def _effect(label: str) -> int:
    """A step's database effect: one Mark, committed with the step's record."""
    return Mark.objects.create(label=label).pk


@job(
    key=lambda label, fail_on: f"steps:{label}",
    atomic=False,
    retry=Retry(attempts=3, base="10s", jitter="none"),
)
def stepped(ctx, label: str, fail_on: list) -> dict:
    """Three steps; step two raises on the attempts listed in ``fail_on``."""
    one = ctx.step.run("one", lambda: _effect(f"{label}:one"))

    def two():
        _effect(f"{label}:two")
        if ctx.attempt in fail_on:
            raise RuntimeError(f"step two fails on attempt {ctx.attempt}")
        return "two-done"

    second = ctx.step.run("two", two)
    third = ctx.step.run("three", lambda: _effect(f"{label}:three"))
    return {"one": one, "two": second, "three": third}


@job(key=lambda label: f"pure-steps:{label}", atomic=False)
def pure_and_writing_steps(ctx, label: str) -> None:
    """Two steps that send nothing, then one that writes a Mark."""
    ctx.step.run("pure one", lambda: 1)
    ctx.step.run("pure two", lambda: {"two": 2})
    ctx.step.run("writes", lambda: _effect(f"{label}:writes"))


@job(key=lambda label: f"saga:{label}", atomic=False, retry=Retry(attempts=2, base="10s"))
def saga(ctx, label: str, fail: str = "never") -> None:
    """Two compensable steps, then a third that fails as told (``always`` or ``first``)."""
    ctx.step.run(
        "charge",
        lambda: {"charge": _effect(f"{label}:charge")},
        compensate=lambda out: _effect(f"{label}:refund:{out['charge']}"),
    )
    ctx.step.run(
        "reserve",
        lambda: {"reserve": _effect(f"{label}:reserve")},
        compensate=lambda out: _effect(f"{label}:release:{out['reserve']}"),
    )
    if fail == "always" or (fail == "first" and ctx.attempt == 1):
        raise RuntimeError("shipping failed")
    ctx.step.run("ship", lambda: _effect(f"{label}:ship"))


def _refund(card: dict) -> None:
    raise ValueError(f"refund to {card['number']} refused")


def _reserve(card: dict) -> None:
    raise LookupError(f"no stock for {card['holder']} ({card})")


@job(key=lambda label: f"secret:{label}", sensitive=("card",), atomic=False, retry=1)
def secret_saga(ctx, label: str, card: dict) -> None:
    """A saga whose sensitive argument is a dict: its step, compensation and job errors all
    quote values nested in it."""
    ctx.step.run("charge", lambda: {"charged": label}, compensate=lambda out: _refund(card))
    ctx.step.run("reserve", lambda: _reserve(card))


@job(key=lambda label: f"sleeper:{label}", atomic=False)
def sleeper(ctx, label: str) -> None:
    ctx.step.run("before", lambda: _effect(f"{label}:before"))
    ctx.step.sleep("cool-off", "1h")
    ctx.step.run("after", lambda: _effect(f"{label}:after"))


@job(key=lambda label, order_id: f"waiter:{label}", atomic=False)
def waiter(ctx, label: str, order_id: int) -> dict:
    try:
        paid = ctx.step.wait_for_event(
            "settled", "test.settled", match={"order_id": order_id}, timeout="1d"
        )
    except WaitTimedOut:
        ctx.step.run("gave-up", lambda: _effect(f"{label}:timeout"))
        return {"timed_out": True}
    ctx.step.run("ship", lambda: _effect(f"{label}:ship"))
    return paid


@job(key=lambda label: f"charge-once:{label}", atomic=False)
def charge_once(ctx, label: str) -> None:
    ctx.step.run("charge", lambda: _effect(f"{label}:charge"), once=True)
    ctx.step.run("receipt", lambda: _effect(f"{label}:receipt"))


@job(key=lambda label, mistake: f"misuse:{label}", atomic=False)
def misuses_steps(ctx, label: str, mistake: str) -> None:
    if mistake == "duplicate":
        ctx.step.run("same", lambda: 1)
        ctx.step.run("same", lambda: 2)
    elif mistake == "not-json":
        ctx.step.run("object", lambda: object())
    elif mistake == "unknown-event":
        ctx.step.wait_for_event("w", "no.such.event", timeout="1h")


@job(key=lambda label: f"atomic-steps:{label}")
def atomic_stepped(ctx, label: str) -> None:
    """Steps in an atomic job: their records commit with the job, or not at all."""
    ctx.step.run("one", lambda: _effect(f"{label}:one"))
    ctx.step.run("two", lambda: _effect(f"{label}:two"))


# A workflow carried by the engine ------------------------------------------------------------


@use_case("tests.hold-book")
def hold_book(ctx, input, outputs):
    return {"hold": _effect(f"{input['loan']}:hold")}


@use_case("tests.release-book")
def release_book(ctx, input, output):
    _effect(f"{input['loan']}:release:{output['hold']}")


@use_case("tests.open-loan")
def open_loan(ctx, input, outputs):
    if input.get("fail"):
        raise Permanent("the member is blocked")
    return {"loan": _effect(f"{input['loan']}:open"), "hold": outputs["tests.hold-book"]["hold"]}


loan_flow = workflow(
    "tests.loan",
    carried_by="workflow",
    key=lambda loan: f"loan:{loan}",
    steps=[
        Step(use_case="tests.hold-book", compensate=Compensation.use_case("tests.release-book")),
        Step(
            "open",
            use_case="tests.open-loan",
            compensate=Compensation.none(reason="opening is the last step"),
        ),
    ],
    retry=Retry(attempts=2, base="1s"),
)


def _pause_at(pause_dir: str, boundary: str) -> None:
    """If the test asked to stop here, say so and block until the worker is killed."""
    if Path(pause_dir, f"pause-{boundary}").exists():
        Path(pause_dir, f"reached-{boundary}").write_text(str(os.getpid()))
        while True:
            time.sleep(0.05)


@job(
    key=lambda label, pause_dir: f"crash-proof:{label}",
    atomic=False,
    retry=Retry(attempts=20, base="1s", jitter="none"),
    timeout="5m",
)
def crash_proof(ctx, label: str, pause_dir: str) -> None:
    """Four steps; the test kills its worker inside and after each of them."""
    for number in range(1, 5):

        def step(number=number):
            mark = _effect(f"{label}:{number}")
            _pause_at(pause_dir, f"in-{number}")  # killed here: the write rolls back
            return mark

        ctx.step.run(f"step-{number}", step)
        _pause_at(pause_dir, f"after-{number}")  # killed here: the step is recorded
