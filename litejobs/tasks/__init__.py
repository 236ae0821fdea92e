"""Django Tasks on litejobs: ``TASKS = {"default": {"BACKEND": "litejobs.tasks.LitejobsBackend"}}``
(``backend``). The backend registers how stored task rows run with the job catalog."""

from .backend import LitejobsBackend

__all__ = ["LitejobsBackend"]
