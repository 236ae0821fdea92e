"""System checks of human work queues (registered when litejobs' app is ready)."""

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.core import checks

from . import declarations as queues


@checks.register("litejobs")
def check_work_queues(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> Sequence[checks.CheckMessage]:
    """litejobs.E010 (an invalid ``work_queue`` or ``score_rule`` declaration in a
    ``queues.py``, ``work-queue-invalid``) and E011 (a queue whose score rule no installed app
    declares, ``score-rule-unknown``)."""
    found = [
        checks.Error(
            f"{module}: [{getattr(error, 'code', 'work-queue-invalid')}] {error.args[0]}",
            hint="Fix the declaration; the admin shows only the queues that were declared.",
            obj=module,
            id="litejobs.E010",
        )
        for module, error in queues.declaration_errors()
    ]
    found += [
        checks.Error(
            f"{queue.module}: [score-rule-unknown] work queue {queue.name!r} is scored by "
            f"{queue.score!r}, which no installed app declares.",
            hint=f"Declare @score_rule({queue.score!r}) in a queues.py, or fix score=.",
            obj=queue.module,
            id="litejobs.E011",
        )
        for queue in queues.unknown_rules()
    ]
    return found
