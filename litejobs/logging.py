"""The path ``LOGGING`` names: ``litejobs.logging.JSONFormatter`` (one JSON object per line,
with the structured fields of the worker's job lines). The code lives in
``litejobs.core.logs``."""

from .core.logs import JSONFormatter

__all__ = ["JSONFormatter"]
