"""Verbs of ``manage.py litejobs``: each module here defines ``register(subparsers)``.

A verb's handler is ``handler(command, options) -> int`` (the exit code); it prints through
``command.stdout`` and honours ``--json``. Exit codes: 0 done, 1 refused (a litejobs error,
printed as ``[code] message``), 2 bad usage, 3 ``doctor`` found problems.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from argparse import ArgumentParser
from typing import TYPE_CHECKING, Any

import psycopg
from django.db import ProgrammingError

from ..conf import settings
from ..exceptions import MigrationsUnapplied
from ..runtime.startup import database_checks

if TYPE_CHECKING:
    from argparse import _SubParsersAction

    from django.core.management.base import BaseCommand, CommandParser

    #: What each verb module's ``register`` receives: the subcommands of ``manage.py litejobs``.
    Subparsers = _SubParsersAction[CommandParser]

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_PROBLEMS = 3


def register_all(subparsers: Subparsers) -> None:
    """Let every verb module in this package add its subcommands."""
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        importlib.import_module(f"{__name__}.{module}").register(subparsers)


def run_verb(command: BaseCommand, options: dict[str, Any]) -> int:
    """Run the verb's handler. On a database where litejobs' tables are missing it raises
    ``MigrationsUnapplied`` (saying which migrations to apply) instead of the driver's error."""
    try:
        code: int = options["handler"](command, options)
    except ProgrammingError as error:
        if not isinstance(error.__cause__, psycopg.errors.UndefinedTable):
            raise
        unapplied = [m for m in database_checks(settings.DATABASE) if m.id == "litejobs.E043"]
        if not unapplied:
            raise
        message = unapplied[0].msg.removeprefix("[migrations-unapplied] ")
        raise MigrationsUnapplied(f"{message} {unapplied[0].hint}") from error
    return code


def add_json_flag(parser: ArgumentParser) -> None:
    """The ``--json`` flag every verb takes."""
    parser.add_argument("--json", action="store_true", help="Print machine-readable JSON.")


def emit(command: BaseCommand, options: dict[str, Any], data: Any, text: str) -> None:
    """Print ``data`` as JSON with ``--json``, else the human ``text``."""
    if options.get("json"):
        command.stdout.write(json.dumps(data, indent=2, default=str, sort_keys=True))
    else:
        command.stdout.write(text)
