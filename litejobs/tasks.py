"""Moved to ``litejobs.contrib.django_tasks.backend``; this path keeps working:
``TASKS = {"default": {"BACKEND": "litejobs.tasks.LitejobsBackend"}}``."""

from .contrib.django_tasks.backend import LitejobsBackend

__all__ = ["LitejobsBackend"]
