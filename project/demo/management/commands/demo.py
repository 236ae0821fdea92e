"""``manage.py demo`` (what ``make demo`` runs): the demo marketplace, web server and worker."""

import argparse

from django.core.management.base import BaseCommand, CommandError

from project.demo.runner import DemoError, DemoRunner


def port_number(value: str) -> int:
    number = int(value)
    if not 1 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"must be a TCP port (1-65535), got {value}")
    return number


class Command(BaseCommand):
    help = (
        "Migrate, load the demo data, then run the web server (admin) and a worker until "
        "Ctrl-C, which stops all of them (and the embedded PostgreSQL if this run started it)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1", help="Interface the web server binds.")
        parser.add_argument("--port", type=port_number, default=8000, help="Web server port.")
        parser.add_argument(
            "--no-worker",
            dest="worker",
            action="store_false",
            help="Run only the web server (e.g. when a worker runs elsewhere).",
        )

    def handle(self, *args, **options):
        runner = DemoRunner(
            host=options["host"],
            port=options["port"],
            worker=options["worker"],
            out=self.stdout,
            verbosity=options["verbosity"],
        )
        try:
            code = runner.run()
        except DemoError as exc:
            raise CommandError(str(exc)) from exc
        if code:
            raise SystemExit(code)  # the runner has said why
