"""Imports the broken jobs module again (its first import failed half-way)."""

from .jobs import fine  # noqa: F401
