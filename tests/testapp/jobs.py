"""Jobs the test suite runs, in-process and in real worker processes."""

import os
import time
from pathlib import Path

from litejobs import Concurrency, Permanent, Retry, job

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


@job(key=lambda card_number: "charge", sensitive=("card_number",), retry=1)
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


@job(key=lambda label: f"progress:{label}")
def reports_progress(ctx, label: str) -> None:
    ctx.progress(5, 10, note="halfway")
    time.sleep(1.2)
    ctx.progress(10, 10, note="done")


@job(key=lambda n: f"noop:{n}")
def noop(ctx, n: int) -> None:
    """Does nothing (throughput tests)."""


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
