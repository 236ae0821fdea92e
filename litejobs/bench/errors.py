"""The bench's refusal: a workload it could not complete (``bench-failed``)."""

from ..core.errors import LitejobsError

__all__ = ["BenchError"]


class BenchError(LitejobsError):
    """The bench could not complete a workload; the message says which and why."""

    code = "bench-failed"
