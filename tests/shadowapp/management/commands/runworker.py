"""tests.shadowapp ships a `runworker` too."""

from ._shadow import ShadowCommand as Command

__all__ = ["Command"]
