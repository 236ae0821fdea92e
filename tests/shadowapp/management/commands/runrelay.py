"""tests.shadowapp ships a `runrelay` too."""

from ._shadow import ShadowCommand as Command

__all__ = ["Command"]
