"""Writing the operator action log (``OperatorAction``): one row per change an operator made.

Every operator verb (on jobs and queues here; on schedules, imports, report runs and limits and
webhook endpoints in their features) calls ``record`` inside the transaction of its change, so
the row commits with the change or not at all; a refused action changes nothing and leaves no
row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..conf import settings
from ..core import clock
from ..core.enums import OperatorVerb
from ..models import OperatorAction

#: The longest reason kept (the admin's reason form allows as much).
REASON_MAX = 1000


@dataclass(frozen=True)
class Actor:
    """Who acts: ``by`` as logs show it, the user's id when a Django user acts (the admin),
    and why (the reason the operator gave, may be empty)."""

    by: str
    user_id: int | None = None
    reason: str = ""


def record(
    verb: OperatorVerb,
    actor: Actor,
    *,
    affected: int,
    job_ids: Iterable[int] = (),
    filter: Mapping[str, Any] | None = None,
    change: Mapping[str, tuple[Any, Any]] | None = None,
) -> OperatorAction:
    """Write one log row (call it inside the action's transaction). ``filter`` names what the
    action matched or acted on (``{"schedule": name}``); ``change`` maps each setting it
    changed to its old and new value."""
    return OperatorAction.objects.using(settings.DATABASE).create(
        at=clock.now(),
        by=actor.by,
        user_id=actor.user_id,
        verb=verb,
        job_ids=list(job_ids),
        filter=dict(filter or {}),
        change={field: list(values) for field, values in (change or {}).items()},
        affected=affected,
        reason=(actor.reason or "").strip()[:REASON_MAX],
    )
