"""Verbs of ``manage.py litejobs``: each module here defines ``register(subparsers)``, and so
does each feature's verbs module (its ``Feature.verbs``, such as ``litejobs.reports.cli``).
This package holds what every verb shares and the job queue's own verbs, ``doctor`` and
``purge``.

A verb's handler is ``handler(command, options) -> int`` (the exit code); it prints through
``command.stdout`` and honours ``--json``. Exit codes: 0 done, 1 refused (a litejobs error,
printed as ``[code] message``), 2 bad usage, 3 ``doctor`` found problems. With ``--json`` a
refusal or a bad usage is one JSON object ``{"code": ..., "message": ...}`` on stdout instead.
"""

from __future__ import annotations

import copy
import importlib
import json
import logging
import pkgutil
from argparse import SUPPRESS, ArgumentParser, _SubParsersAction
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import psycopg
from django.db import DatabaseError, OperationalError

from ..conf import settings
from ..core import features
from ..exceptions import DatabaseUnreachable, LitejobsError, MigrationsUnapplied
from ..runtime.startup import database_checks

if TYPE_CHECKING:
    from argparse import Action

    from django.core.checks import CheckMessage
    from django.core.management.base import BaseCommand, CommandParser

    #: What each verb module's ``register`` receives: the subcommands of ``manage.py litejobs``.
    Subparsers = _SubParsersAction[CommandParser]

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_PROBLEMS = 3

#: The code of a bad usage answered in JSON (an unknown verb or option, a malformed value).
USAGE_INVALID = "usage-invalid"
#: The code of a refusal to run because Django's system checks found errors, answered in JSON.
CHECKS_FAILED = "checks-failed"


def register_all(subparsers: Subparsers) -> None:
    """Let every verb module add its subcommands: this package's, and each feature's, in the
    order of their names (a feature's is its name)."""
    modules = {name: f"{__name__}.{name}" for _, name, _ in pkgutil.iter_modules(__path__)}
    modules.update((f.name, f.verbs) for f in features.installed() if f.verbs)
    for _, module in sorted(modules.items()):
        importlib.import_module(module).register(subparsers)


def common_options(parser: ArgumentParser) -> list[Action]:
    """Django's options of every command (``--settings``, ``-v``, ``--traceback`` ...), as
    ``parser`` holds them before the verbs are added."""
    return [a for a in parser._actions if a.option_strings and a.dest not in ("help", "version")]


def accept_after_the_verb(subparsers: Subparsers, options: list[Action]) -> None:
    """Let every verb (nested ones too) take ``options`` after it, as every Django command
    does: a copy that sets the value only when given there, so one given before the verb (or
    the default) stands otherwise."""
    for parser in subparsers.choices.values():
        for option in options:
            shared = copy.copy(option)
            shared.default = SUPPRESS
            parser._add_action(shared)
        for action in parser._actions:
            if isinstance(action, _SubParsersAction):
                accept_after_the_verb(action, options)


def run_verb(command: BaseCommand, options: dict[str, Any]) -> int:
    """Run the verb's handler. On a database it cannot use it raises what ``doctor`` reports
    instead of the driver's error: ``DatabaseUnreachable`` (no connection) or
    ``MigrationsUnapplied`` (litejobs' tables are missing; it names the migrations to apply)."""
    try:
        code: int = options["handler"](command, options)
    except (DatabaseError, psycopg.Error) as error:
        refusal = _unusable_database(error)
        if refusal is None:
            raise
        raise refusal from error
    return code


def _unusable_database(error: Exception) -> LitejobsError | None:
    """Why the database cannot serve a verb, as ``doctor``'s checks word it, or ``None`` when
    ``error`` is another one (a bug to show as it is). Django wraps the driver's errors; a
    litejobs statement on a psycopg cursor raises them as they are."""
    driver = error if isinstance(error, psycopg.Error) else error.__cause__
    if not isinstance(error, OperationalError | psycopg.OperationalError) and not isinstance(
        driver, psycopg.errors.UndefinedTable
    ):
        return None
    refusals = {"litejobs.E042": DatabaseUnreachable, "litejobs.E043": MigrationsUnapplied}
    for checked in database_checks(settings.DATABASE, waited=timedelta(0)):
        kind = refusals.get(checked.id or "")
        if kind is not None:
            message = checked.msg.split("] ", 1)[-1]
            return kind(f"{message} {checked.hint or ''}".strip())
    return None


def add_json_flag(parser: ArgumentParser) -> None:
    """The ``--json`` flag every verb takes."""
    parser.add_argument("--json", action="store_true", help="Print machine-readable JSON.")


def emit(command: BaseCommand, options: dict[str, Any], data: Any, text: str) -> None:
    """Print ``data`` as JSON with ``--json``, else the human ``text``."""
    if options.get("json"):
        command.stdout.write(json.dumps(data, indent=2, default=str, sort_keys=True))
    else:
        command.stdout.write(text)


def refuse(
    command: BaseCommand,
    as_json: bool,
    code: str,
    message: str,
    details: dict[str, Any] | None = None,
) -> None:
    """Print a refusal: ``[code] message`` on stderr, or with ``--json`` the JSON object
    ``{"code": ..., "message": ...}`` (and ``details``, if any) on stdout, and nothing else
    there."""
    if as_json:
        answer = {**(details or {}), "code": code, "message": message}
        command.stdout.write(json.dumps(answer, sort_keys=True))
    else:
        command.stderr.write(f"[{code}] {message}")


def refuse_checks(command: BaseCommand, issues: list[CheckMessage]) -> None:
    """With ``--json``, Django's system checks found errors: one JSON object on stdout, the
    ``checks-failed`` refusal listing each (id, level, message, hint, object)."""
    refuse(
        command,
        True,
        CHECKS_FAILED,
        f"System checks found {len(issues)} serious "
        f"{'issue' if len(issues) == 1 else 'issues'} ({', '.join(i.id or '?' for i in issues)}); "
        "nothing ran. Fix them (`manage.py check` lists them too).",
        {
            "checks": [
                {
                    "id": issue.id,
                    "level": logging.getLevelName(issue.level),
                    "message": issue.msg,
                    "hint": issue.hint,
                    "object": str(issue.obj) if issue.obj is not None else None,
                }
                for issue in issues
            ]
        },
    )


def usage(command: BaseCommand, options: dict[str, Any], message: str) -> int:
    """A bad usage found by a handler (not by argparse): printed as ``refuse`` prints, with the
    code ``usage-invalid``; answers ``EXIT_USAGE``."""
    refuse(command, bool(options.get("json")), USAGE_INVALID, message)
    return EXIT_USAGE
