"""Jobs with settle hooks and a debounce, for the hooks tests (imported by ``jobs.py``)."""

import os
import time
from pathlib import Path

from litejobs import Retry, job

from .models import Mark


def note_settled(settled) -> None:
    """Record each call: ``hook:<outcome>`` with the job's id, the error or result in ``note``."""
    note = settled.error.error_class if settled.error else repr(settled.result)
    Mark.objects.create(
        label=f"hook:{settled.outcome}", value=settled.job_id, note=f"{note}|{settled.key}"
    )


def failing_hook(settled) -> None:
    """A hook that always raises (what it wrote rolls back with its try)."""
    Mark.objects.create(label="hook-try", value=settled.attempt)
    raise RuntimeError("the hook's partner is down")


def slow_hook(settled) -> None:
    """Says it started (a file ``<HOOK_GATE>.started.<attempt>``), sleeps ``HOOK_SLEEP``
    seconds (long enough for a test to kill its worker), then records its run."""
    gate = os.environ.get("HOOK_GATE")
    if gate:
        Path(f"{gate}.started.{settled.attempt}").touch()
    time.sleep(float(os.environ.get("HOOK_SLEEP", "0")))
    Mark.objects.create(
        label="hook-ran", value=os.getpid(), note=f"{settled.key}:{settled.attempt}"
    )


@job(
    key=lambda label: f"hooked:{label}",
    retry=Retry(attempts=2, base="10s", jitter="none"),
    atomic=False,
    on_settled=note_settled,
)
def hooked(ctx, label: str, fail: bool = False, nap: bool = False) -> int:
    """Fails when told to, sleeps durably when told to, else answers 42."""
    if nap:
        ctx.step.sleep("nap", "1h")
    if fail:
        raise RuntimeError(f"hooked {label} fails")
    return 42


@job(
    key=lambda label: f"hooked-dropped:{label}",
    dead_letter=False,
    on_settled=note_settled,
    retry=Retry(attempts=1),
)
def hooked_dropped(ctx, label: str) -> None:
    """Fails its only attempt: removed, not kept dead."""
    raise ValueError(f"dropped {label}")


@job(key=lambda label: f"hooked-failing:{label}", on_settled=failing_hook)
def hooked_failing_hook(ctx, label: str) -> str:
    """Succeeds; its hook never does."""
    return "fine"


@job(key=lambda label: f"hooked-slow:{label}", on_settled=slow_hook)
def hooked_slow_hook(ctx, label: str) -> str:
    """Succeeds; its hook takes its time."""
    return "fine"


@job(key=lambda doc_id: f"index:{doc_id}", debounce="5s")
def reindex(ctx, doc_id: int, text: str) -> None:
    """Indexes a document's latest text (debounced: one run after a burst of edits)."""
    Mark.objects.create(label=f"index:{doc_id}", value=doc_id, note=text)
