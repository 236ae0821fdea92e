"""``manage.py litejobs pause|resume QUEUE``: the operator's switch on a queue.

A paused queue keeps its jobs; workers claim none of them until it is resumed, and jobs
already running finish. The switch records who changed it, when and (to pause) why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..jobs import queues
from ..models import QueueState
from ..runtime.startup import warn_unused_queues
from . import EXIT_OK, add_json_flag, emit
from .jobs import acting_user, add_by_flag, iso

if TYPE_CHECKING:
    from django.core.management.base import BaseCommand

    from . import Subparsers


def register(subparsers: Subparsers) -> None:
    """Add ``pause`` and ``resume``."""
    parser = subparsers.add_parser("pause", help="Stop workers claiming a queue's jobs.")
    parser.add_argument("queue")
    parser.add_argument(
        "--reason", required=True, help="Why (shown in the admin and by doctor); required."
    )
    add_by_flag(parser)
    add_json_flag(parser)
    parser.set_defaults(handler=handle_pause)

    parser = subparsers.add_parser("resume", help="Let workers claim a paused queue's jobs again.")
    parser.add_argument("queue")
    add_by_flag(parser)
    add_json_flag(parser)
    parser.set_defaults(handler=handle_resume)


def _as_dict(state: QueueState) -> dict[str, Any]:
    return {
        "queue": state.name,
        "paused": state.paused,
        "reason": state.reason,
        "changed_by": state.changed_by,
        "changed_at": iso(state.changed_at),
    }


def handle_pause(command: BaseCommand, options: dict[str, Any]) -> int:
    """``pause QUEUE --reason ...``: see ``queues.pause``."""
    warn_unused_queues(command, [options["queue"]], "pause")
    state = queues.pause(options["queue"], reason=options["reason"], by=acting_user(options))
    text = (
        f"Queue {state.name!r} is paused by {state.changed_by}: {state.reason}\n"
        f"Workers claim none of its jobs until `manage.py litejobs resume {state.name}`."
    )
    emit(command, options, _as_dict(state), text)
    return EXIT_OK


def handle_resume(command: BaseCommand, options: dict[str, Any]) -> int:
    """``resume QUEUE``: see ``queues.resume``."""
    warn_unused_queues(command, [options["queue"]], "resume")
    state = queues.resume(options["queue"], by=acting_user(options))
    emit(command, options, _as_dict(state), f"Queue {state.name!r} is running again.")
    return EXIT_OK
