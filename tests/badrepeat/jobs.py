"""A jobs module whose second declaration is refused after its first succeeded."""

from litejobs import job


@job(key=lambda n: f"fine:{n}")
def fine(ctx, n: int) -> None:
    """Valid, and declared again when schedules.py imports this module a second time."""


@job(queue="default")
def keyless(ctx, n: int) -> None:
    """Declared without an idempotency key: refused."""
