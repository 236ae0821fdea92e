"""``manage.py runworker``: run litejobs jobs until SIGTERM (or, with ``--once``, until idle)."""

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...exceptions import InvalidInput
from ...jobs.queues import check_queue
from ...runtime.startup import prepare, warn_unused_queues
from ...worker import Supervisor, Worker


def positive_int(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return number


def queue_names(value: str) -> list[str]:
    """``--queues a,b``: each a queue name as ``@job(queue=...)`` takes (``queue-invalid``)."""
    names = [name.strip() for name in value.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(
            "[queue-invalid] --queues names no queue: name the queues to serve "
            "(--queues emails,reports), or leave --queues out to serve every queue."
        )
    try:
        return [check_queue(name) for name in names]
    except InvalidInput as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def non_negative_float(value: str) -> float:
    number = float(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return number


class Command(BaseCommand):
    help = "Run litejobs jobs: claim, run, complete; drain on SIGTERM."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--queues",
            type=queue_names,
            default=None,
            help="Comma-separated queues to serve (default: all).",
        )
        parser.add_argument(
            "--concurrency",
            type=positive_int,
            default=4,
            help="Threads (or processes with --pool processes), each with its own connection.",
        )
        parser.add_argument("--pool", choices=["threads", "processes"], default="threads")
        parser.add_argument(
            "--once", action="store_true", help="Run what is due, then exit (tests, cron)."
        )
        parser.add_argument(
            "--max-jobs", type=positive_int, default=None, help="Exit after this many jobs."
        )
        parser.add_argument(
            "--drain-timeout",
            type=non_negative_float,
            default=None,
            help="Seconds SIGTERM waits for running jobs (default LITEJOBS['DRAIN_TIMEOUT']).",
        )
        parser.add_argument(
            "--no-relay",
            action="store_true",
            help="Do not run the outbox relay in this process (run manage.py runrelay instead).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        queues = options["queues"] or []
        warn_unused_queues(self, queues, "--queues")
        if not prepare(self, "runworker"):
            return
        if options["pool"] == "processes":
            # The children run the code and settings just checked: they say nothing new.
            child_args = ["--concurrency", "1", "--skip-checks"]
            if queues:
                child_args += ["--queues", ",".join(queues)]
            for flag in ("once", "max_jobs", "drain_timeout", "no_relay"):
                value = options[flag]
                if value not in (None, False):
                    child_args += [f"--{flag.replace('_', '-')}"] + (
                        [] if value is True else [str(value)]
                    )
            code = Supervisor(options["concurrency"], child_args).run()
        else:
            code = Worker(
                queues=queues,
                concurrency=options["concurrency"],
                once=options["once"],
                max_jobs=options["max_jobs"],
                drain_timeout=options["drain_timeout"],
                relay=False if options["no_relay"] else None,
            ).run()
        if code:
            raise CommandError(f"worker exited with {code}", returncode=code)
