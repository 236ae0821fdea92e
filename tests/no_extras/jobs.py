"""The jobs of a project without litejobs' extras: one enqueued, one scheduled, one subscribed."""

from litejobs import job
from litejobs.outbox import subscriber


@job(key=lambda label: f"plain:{label}")
def plain(ctx, label: str) -> dict:
    return {"ran": label}


@job(key=lambda: "tick")
def tick(ctx) -> None:
    return None


@subscriber("noextras.happened")
def heard(ctx, message) -> dict:
    return {"heard": message.payload["what"]}
