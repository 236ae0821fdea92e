"""tests.shadowapp ships a `runscheduler` too."""

from ._shadow import ShadowCommand as Command

__all__ = ["Command"]
