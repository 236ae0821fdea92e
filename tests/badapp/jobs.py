"""A jobs module with a declaration error, for the system check tests."""

from litejobs import job


@job(queue="default")
def has_no_key(ctx, n: int) -> None:
    """Declared without an idempotency key: refused."""
