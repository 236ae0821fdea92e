"""``manage.py runrelay``: publish the transactional outbox until SIGTERM.

Every ``runworker`` runs a relay too (unless ``--no-relay`` or ``LITEJOBS["RELAY_IN_WORKER"]``
is off); run this where no worker runs, or to keep publishing apart from job processing.
Any number of relays may run: one lease elects the one that publishes.
"""

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...outbox.relay import OutboxRelay
from ...runtime.startup import prepare


def positive_int(value: str) -> int:
    number = int(value)
    if not 1 <= number <= 10_000:
        raise argparse.ArgumentTypeError(f"must be 1-10000, got {value}")
    return number


class Command(BaseCommand):
    help = "Publish litejobs outbox messages to their subscribers and webhooks."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--once",
            action="store_true",
            help="Publish what is pending, then exit (exits at once if another relay leads).",
        )
        parser.add_argument(
            "--batch",
            type=positive_int,
            default=None,
            help="Messages per transaction (default LITEJOBS['OUTBOX_BATCH']).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not prepare(self, "runrelay"):
            return
        code = OutboxRelay(batch_size=options["batch"], once=options["once"]).run()
        if code:
            raise CommandError(f"relay exited with {code}", returncode=code)
