"""``manage.py litejobs resolve-step JOB STEP --ran|--not-ran``: unblock a held job."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..jobs import steps
from . import EXIT_OK, add_json_flag, emit
from .jobs import acting_user, add_by_flag, add_reason_flag

if TYPE_CHECKING:
    from django.core.management.base import BaseCommand

    from . import Subparsers


def register(subparsers: Subparsers) -> None:
    """Add ``resolve-step``."""
    parser = subparsers.add_parser(
        "resolve-step",
        help="Say whether a once=True step whose outcome is unknown took effect.",
    )
    parser.add_argument("job", type=int)
    parser.add_argument("step")
    verdict = parser.add_mutually_exclusive_group(required=True)
    verdict.add_argument("--ran", action="store_true", help="It took effect: do not run it again.")
    verdict.add_argument("--not-ran", action="store_true", help="It did not: run it again.")
    add_by_flag(parser)
    add_reason_flag(parser)
    add_json_flag(parser)
    parser.set_defaults(handler=handle_resolve)


def handle_resolve(command: BaseCommand, options: dict[str, Any]) -> int:
    """``resolve-step``: see ``litejobs.jobs.steps.resolve_step``."""
    ran = bool(options["ran"])
    steps.resolve_step(
        options["job"], options["step"], ran=ran, by=acting_user(options), reason=options["reason"]
    )
    verdict = "recorded as done" if ran else "will run again"
    emit(
        command,
        options,
        {"job_id": options["job"], "step": options["step"], "ran": ran},
        f"Step {options['step']!r} of job {options['job']} {verdict}; the job is due now.",
    )
    return EXIT_OK
