"""``manage.py litejobs pause|resume QUEUE``: the operator's switch on a queue.

A paused queue keeps its jobs; workers claim none of them until it is resumed, and jobs
already running finish. The switch records who changed it, when and (to pause) why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..conf import settings
from ..jobs import queues
from ..models import QueueState
from ..runtime.startup import warn_unused_queues
from . import EXIT_OK, add_json_flag, emit
from .jobs import acting_user, add_by_flag, add_reason_flag, iso

if TYPE_CHECKING:
    from django.core.management.base import BaseCommand

    from . import Subparsers


def register(subparsers: Subparsers) -> None:
    """Add ``pause`` and ``resume``."""
    parser = subparsers.add_parser("pause", help="Stop workers claiming a queue's jobs.")
    parser.add_argument("queue")
    add_reason_flag(parser, required=True)
    add_by_flag(parser)
    add_json_flag(parser)
    parser.set_defaults(handler=handle_pause)

    parser = subparsers.add_parser("resume", help="Let workers claim a paused queue's jobs again.")
    parser.add_argument("queue")
    add_reason_flag(parser)
    add_by_flag(parser)
    add_json_flag(parser)
    parser.set_defaults(handler=handle_resume)


def _as_dict(state: QueueState, *, changed: bool, warnings: list[str]) -> dict[str, Any]:
    return {
        "queue": state.name,
        "paused": state.paused,
        "changed": changed,
        "reason": state.reason,
        "changed_by": state.changed_by,
        "changed_at": iso(state.changed_at),
        "warnings": warnings,
    }


def _checked_queue(command: BaseCommand, options: dict[str, Any], verb: str) -> list[str]:
    """Refuse a malformed queue name (``queue-invalid``) before anything else; answer the
    ``queue-unused`` warnings of a name no declaration uses (printed on stderr too)."""
    queues.check_queue(options["queue"])
    return warn_unused_queues(command, [options["queue"]], verb)


def handle_pause(command: BaseCommand, options: dict[str, Any]) -> int:
    """``pause QUEUE --reason ...``: see ``queues.pause``."""
    warnings = _checked_queue(command, options, "pause")
    state = queues.pause(options["queue"], reason=options["reason"], by=acting_user(options))
    text = (
        f"Queue {state.name!r} is paused by {state.changed_by}: {state.reason}\n"
        f"Workers claim none of its jobs until `manage.py litejobs resume {state.name}`."
    )
    emit(command, options, _as_dict(state, changed=True, warnings=warnings), text)
    return EXIT_OK


def handle_resume(command: BaseCommand, options: dict[str, Any]) -> int:
    """``resume QUEUE``: see ``queues.resume``; a queue that was not paused is left as it is."""
    warnings = _checked_queue(command, options, "resume")
    queue = options["queue"]
    state = queues.resume(queue, by=acting_user(options), reason=options.get("reason") or "")
    if state is not None:
        data = _as_dict(state, changed=True, warnings=warnings)
        emit(command, options, data, f"Queue {queue!r} is running again.")
        return EXIT_OK
    unchanged = QueueState.objects.using(settings.DATABASE).filter(name=queue).first()
    data = _as_dict(unchanged or QueueState(name=queue), changed=False, warnings=warnings)
    emit(command, options, data, f"Queue {queue!r} was not paused; nothing changed.")
    return EXIT_OK
