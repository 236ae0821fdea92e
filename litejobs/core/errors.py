"""The errors below everything else: a refusal with a stable code, refused input, and the few
the core itself raises.

Duration parsing (``core.durations``) raises them, the records validate with them, and
``litejobs.exceptions`` builds on durations (``RetryAfter`` parses its delay), so they are
defined here and are published there: their public path is ``litejobs.exceptions`` (their
``__module__`` says so, as stored error classes, pickles and tracebacks name them).
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

PUBLIC_MODULE = "litejobs.exceptions"


class LitejobsError(Exception):
    """Base of every litejobs error; ``code`` is stable and documented in the README."""

    __module__ = PUBLIC_MODULE
    code = "litejobs-error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return f"[{self.code}] {self.args[0]}"


class DeclarationError(LitejobsError, ImproperlyConfigured):
    """A declaration (``@job``, settings) is invalid; fix the code or settings it names."""

    __module__ = PUBLIC_MODULE
    code = "declaration-invalid"


class InvalidInput(LitejobsError, ValueError):
    """An argument given at run time was refused before anything was written."""

    __module__ = PUBLIC_MODULE
    code = "input-invalid"


class Permanent(Exception):
    """Raise from a job body to stop retrying at once: the job goes to ``dead``."""

    __module__ = PUBLIC_MODULE


class ExtraMissing(LitejobsError, ImproperlyConfigured):
    """A feature was used without the optional package it needs; the message names the
    ``pip install "litejobs[...]"`` that brings it."""

    __module__ = PUBLIC_MODULE
    code = "extra-missing"
