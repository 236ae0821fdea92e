"""litejobs' runtimes keep their documented names whatever the order of ``INSTALLED_APPS``.

Django resolves ``manage.py NAME`` to the first installed app that ships a command ``NAME``,
and channels ships a ``runworker`` of its own (a channel-layer consumer). With ``"channels"``
above ``"litejobs"``, as channels' docs lead people to write, ``manage.py runworker`` would run
channels' worker and stop at ``the following arguments are required: channels``. So litejobs
wraps Django's command table (``django.core.management.get_commands``, which ``manage.py``,
``call_command`` and ``help`` all read) so that its three runtime names always resolve to
litejobs; the check litejobs.W040 tells the user which other app's command is shadowed and how
to still run it, where that matters: ``manage.py check`` and the runtime of that name, not every
other command (``migrate``, ``shell``, ``litejobs list`` ...) that runs the checks.
"""

from __future__ import annotations

import os
import sys
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
        self.django_get_commands.cache_clear()  # type: ignore[attr-defined]  # django-stubs declare a plain function; Django's is cached


def pin_runtime_commands() -> None:
    """Make ``manage.py runworker|runscheduler|runrelay`` litejobs' (idempotent)."""
    from django.core import management

    if not isinstance(management.get_commands, RuntimeCommandTable):
        management.get_commands = RuntimeCommandTable(management.get_commands)


def shadowed_commands() -> list[tuple[str, str]]:
    """``(app name, command name)`` of every other installed app's command that litejobs'
    runtimes shadow, as far as the command this process runs is concerned (see
    ``concerns``)."""
    from django.apps import apps
    from django.core.management import find_commands

    found = []
    for app in apps.get_app_configs():
        if app.name == "litejobs":
            continue
        names = find_commands(os.path.join(app.path, "management"))
        found += [(app.name, name) for name in names if name in RUNTIME_COMMANDS and concerns(name)]
    return found


def concerns(name: str) -> bool:
    """Whether the shadowing of the command ``name`` concerns what this process runs: ``manage.py
    check`` and ``manage.py NAME`` itself, or code that runs the checks on its own
    (``call_command("check")`` in a script or a test); not another management command."""
    from django.core.management import get_commands

    running = sys.argv[1] if len(sys.argv) > 1 else None  # how manage.py names the command
    return running not in get_commands() or running in ("check", name)
