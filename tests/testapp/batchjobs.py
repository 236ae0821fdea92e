"""Jobs the batch and dependency tests run, in-process and in real worker processes."""

import time

import litejobs
from litejobs import Permanent, Retry, job

from .models import Mark


@job(key=lambda label, outcome="done", seconds=0.0: f"child:{label}", retry=Retry(attempts=1))
def child(ctx, label: str, outcome: str = "done", seconds: float = 0.0) -> None:
    """A batch's child: sleeps ``seconds``, then ends done (a Mark) or dead (``fail``)."""
    if seconds:
        time.sleep(seconds)
    if outcome == "fail":
        raise Permanent(f"child {label} fails")
    Mark.objects.create(label=f"child:{label}")


@job(key=lambda label, extra: f"parent:{label}")
def parent(ctx, label: str, extra: int) -> None:
    """A batch's child that adds ``extra`` children to its own batch."""
    current = litejobs.batch.current()
    assert current is not None, "a child of a batch knows its batch"
    for number in range(extra):
        current.add(child, label=f"{label}.{number}")
    Mark.objects.create(label=f"parent:{label}")


@job(key=lambda batch_id, done, dead, cancelled: f"summary:{batch_id}")
def summary(ctx, batch_id: int, done: int, dead: int, cancelled: int) -> None:
    """A batch's on_complete: one Mark per call, labelled with the counts."""
    Mark.objects.create(label=f"summary:{batch_id}:{done}:{dead}:{cancelled}")


@job(key=lambda batch_id, done, dead, cancelled: f"alarm:{batch_id}")
def alarm(ctx, batch_id: int, done: int, dead: int, cancelled: int) -> None:
    """A batch's on_failure: one Mark per call."""
    Mark.objects.create(label=f"alarm:{batch_id}")


@job(key=lambda label: f"after:{label}")
def after(ctx, label: str) -> None:
    """A job that waits on others: one Mark when it runs."""
    Mark.objects.create(label=f"after:{label}")


@job(key=lambda label: f"dropped:{label}", dead_letter=False, retry=Retry(attempts=1))
def dropped(ctx, label: str) -> None:
    """A child that fails for good and is dropped, not kept dead (``dead_letter=False``)."""
    raise Permanent(f"dropped {label}")
