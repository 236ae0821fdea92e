"""``manage.py litejobs <verb>``: the operator's command line (see ``litejobs.cli``)."""

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ...cli import EXIT_REFUSED, register_all, run_verb
from ...exceptions import LitejobsError


class Command(BaseCommand):
    help = "Operate litejobs: inspect, retry, cancel, pause, purge, diagnose, benchmark."

    def add_arguments(self, parser: CommandParser) -> None:
        subparsers = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
        register_all(subparsers)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            code = run_verb(self, options)
        except LitejobsError as error:
            self.stderr.write(str(error))
            code = EXIT_REFUSED
        if code:
            sys.exit(code)
