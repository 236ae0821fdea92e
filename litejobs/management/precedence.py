"""litejobs' runtimes keep their documented names whatever the order of ``INSTALLED_APPS``.

Django resolves ``manage.py NAME`` to the first installed app that ships a command ``NAME``,
and channels ships a ``runworker`` of its own (a channel-layer consumer). With ``"channels"``
above ``"litejobs"``, as channels' docs lead people to write, ``manage.py runworker`` would run
channels' worker and stop at ``the following arguments are required: channels``. So litejobs
wraps Django's command table (``django.core.management.get_commands``, which ``manage.py``,
``call_command`` and ``help`` all read) so that its three runtime names always resolve to
litejobs; the check litejobs.W040 tells the user which other app's command is shadowed and how
to still run it.
"""

from __future__ import annotations

import os
from collections.abc import Callable

#: The commands a litejobs deployment runs, and what each one is.
RUNTIME_COMMANDS = {
    "runworker": "worker",
    "runscheduler": "scheduler",
    "runrelay": "outbox relay",
}


class RuntimeCommandTable:
    """Django's ``get_commands`` with litejobs' runtime names pinned to litejobs.

    Cached like the function it wraps; ``cache_clear`` (which Django calls when a test changes
    ``INSTALLED_APPS``) clears both caches, and the names are pinned only while litejobs is
    installed.
    """

    def __init__(self, django_get_commands: Callable[[], dict[str, str]]) -> None:
        self.django_get_commands = django_get_commands
        self._table: dict[str, str] | None = None

    def __call__(self) -> dict[str, str]:
        table = self._table
        if table is None:
            from django.apps import apps

            table = self.django_get_commands()
            if apps.apps_ready and apps.is_installed("litejobs"):
                table = {**table, **dict.fromkeys(RUNTIME_COMMANDS, "litejobs")}
            self._table = table
        return table

    def cache_clear(self) -> None:
        self._table = None
        # Django's get_commands is an lru_cache; the stubs declare it a plain function.
        self.django_get_commands.cache_clear()  # type: ignore[attr-defined]


def pin_runtime_commands() -> None:
    """Make ``manage.py runworker|runscheduler|runrelay`` litejobs' (idempotent)."""
    from django.core import management

    if not isinstance(management.get_commands, RuntimeCommandTable):
        management.get_commands = RuntimeCommandTable(management.get_commands)


def shadowed_commands() -> list[tuple[str, str]]:
    """``(app name, command name)`` of every other installed app's command that litejobs'
    runtimes shadow."""
    from django.apps import apps
    from django.core.management import find_commands

    found = []
    for app in apps.get_app_configs():
        if app.name == "litejobs":
            continue
        names = find_commands(os.path.join(app.path, "management"))
        found += [(app.name, name) for name in names if name in RUNTIME_COMMANDS]
    return found
