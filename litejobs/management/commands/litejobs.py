"""``manage.py litejobs <verb>``: the operator's command line (see ``litejobs.cli``)."""

import sys
from typing import Any

from django.core import checks
from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...cli import (
    EXIT_REFUSED,
    EXIT_USAGE,
    USAGE_INVALID,
    accept_after_the_verb,
    common_options,
    refuse,
    refuse_checks,
    register_all,
    run_verb,
)
from ...exceptions import LitejobsError


class Command(BaseCommand):
    help = "Operate litejobs: inspect, retry, cancel, pause, purge, diagnose, benchmark."

    #: Django's: whether a bad usage exits (command line) or raises ``CommandError``.
    _called_from_command_line: bool | None = None

    def add_arguments(self, parser: CommandParser) -> None:
        django_options = common_options(parser)
        subparsers = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
        register_all(subparsers)
        accept_after_the_verb(subparsers, django_options)

    def run_from_argv(self, argv: list[str]) -> None:
        """With ``--json``, a bad usage is answered in JSON too: the arguments are read once
        with errors raised rather than printed, then run as Django runs every command."""
        if "--json" in argv[2:]:
            self._called_from_command_line = False
            try:
                self.create_parser(argv[0], argv[1]).parse_args(argv[2:])
            except CommandError as error:
                refuse(self, True, USAGE_INVALID, str(error).removeprefix("Error: "))
                sys.exit(EXIT_USAGE)
        super().run_from_argv(argv)

    #: Whether this run answers in JSON (``--json``): its system check errors too.
    _answers_json = False

    def execute(self, *args: Any, **options: Any) -> str | None:
        self._answers_json = bool(options.get("json"))
        return super().execute(*args, **options)

    def check(self, *args: Any, **kwargs: Any) -> None:
        """Django's system checks; with ``--json``, errors are one JSON object on stdout (the
        ``checks-failed`` refusal, exit 1) and warnings go to stderr, not Django's text."""
        if not self._answers_json:
            return super().check(*args, **kwargs)
        fail_level = kwargs.pop("fail_level", checks.ERROR)
        kwargs.pop("display_num_errors", None)
        issues = [issue for issue in checks.run_checks(*args, **kwargs) if not issue.is_silenced()]
        serious = [issue for issue in issues if issue.is_serious(fail_level)]
        if serious:
            refuse_checks(self, serious)
            sys.exit(EXIT_REFUSED)
        if issues:
            self.stderr.write(
                "\n".join(["System check identified some issues:", *map(str, issues)])
            )
        return None

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            code = run_verb(self, options)
        except LitejobsError as error:
            refuse(self, bool(options.get("json")), error.code, error.args[0])
            code = EXIT_REFUSED
        if code:
            sys.exit(code)
