"""Importing every installed app's declaration modules (``jobs.py``, ``schedules.py``, ...).

A refused declaration (a job without a key, an invalid schedule: any ``LitejobsError``) does not
stop Django from starting: ``Discovery`` keeps it, ``manage.py check`` reports it, and no
runtime starts until it is fixed (every runtime runs the checks first).
"""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec

from django.apps import apps

from .errors import LitejobsError


class Discovery:
    """The declaration modules of some kinds, imported in order, and what they refused."""

    def __init__(self, *kinds: str) -> None:
        #: Module names (``"jobs"`` for each app's ``jobs.py``), imported in this order.
        self.kinds = kinds
        self._errors: list[tuple[str, Exception]] = []

    def run(self) -> None:
        """Import every installed app's module of each kind, keeping refused declarations."""
        self._errors.clear()
        for kind in self.kinds:
            import_declarations(kind, self._errors)

    def errors(self) -> list[tuple[str, Exception]]:
        """The declarations the last run refused, as (module, error)."""
        return list(self._errors)


def import_declarations(kind: str, errors: list[tuple[str, Exception]]) -> None:
    """Import every installed app's ``<kind>.py``; a refused declaration goes to ``errors``.

    A module that imports a broken one (a ``schedules.py`` importing its app's ``jobs.py``)
    fails with the same error; it is kept once, under the module that failed first.
    """
    for app in apps.get_app_configs():
        module = f"{app.name}.{kind}"
        if find_spec(module) is None:
            continue
        try:
            import_module(module)
        except LitejobsError as error:
            if not any(_same_error(error, seen) for _, seen in errors):
                errors.append((module, error))


def _same_error(one: Exception, other: Exception) -> bool:
    return type(one) is type(other) and one.args == other.args
