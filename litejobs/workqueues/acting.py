"""One action on many work items at once (the admin's buttons and bulk actions): ``act``
applies claim, release or resolve to each item, each its own conditional statement, and
answers one ``Outcome`` per item, refusals included."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..core.enums import ItemAction, values_of
from ..exceptions import InvalidInput, LitejobsError
from ..models.workqueues import WorkItem
from . import declarations as queues
from .commands import claim, release, resolve
from .items import check_claims_enabled, check_user, when

__all__ = ["ACTIONS", "Outcome", "act"]

#: Items one call of ``act`` (an admin bulk action) may touch.
ACT_LIMIT = 500


@dataclass(frozen=True)
class Outcome:
    """What one action did to one item: ``ok``, or the refusal's ``code`` and message."""

    item_id: int
    ok: bool
    message: str
    code: str = ""
    item: WorkItem | None = None


#: The actions ``act`` knows, by the name the admin posts.
ACTIONS = values_of(ItemAction)


def act(
    queue: str,
    action: str,
    item_ids: Iterable[int],
    user: Any,
    *,
    resolution: str | None = None,
    note: str = "",
) -> list[Outcome]:
    """Apply one action to each item, each its own conditional statement; answers one
    ``Outcome`` per item (refusals included), in order. At most ``ACT_LIMIT`` items."""
    work_queue = queues.get(queue)
    ids = list(dict.fromkeys(int(i) for i in item_ids))
    if len(ids) > ACT_LIMIT:
        raise InvalidInput(
            f"Act on at most {ACT_LIMIT} items at once ({len(ids)} ticked); narrow the selection.",
            code="selection-too-large",
        )
    if action not in ACTIONS:
        raise InvalidInput(
            f"Unknown action {action!r}; use one of {', '.join(ACTIONS)}.", code="action-invalid"
        )
    check_user(work_queue, user, action)
    if action == ItemAction.RESOLVE:
        resolution = work_queue.check_resolution(resolution)
    elif not work_queue.claims_enabled:
        check_claims_enabled(work_queue, action)
    outcomes = []
    for item_id in ids:
        try:
            if action == ItemAction.CLAIM:
                item = claim(item_id, user, queue=queue)
                text = f"You hold item #{item_id} until {when(item.claim_expires_at)}."
            elif action == ItemAction.RELEASE:
                item = release(item_id, user, queue=queue)
                text = f"Released item #{item_id}: it is open to everyone."
            else:
                item = resolve(item_id, user, resolution, note=note, queue=queue)
                text = f"Resolved item #{item_id}: {work_queue.resolution_label(item.resolution)}."
        except LitejobsError as error:
            outcomes.append(Outcome(item_id, False, error.args[0], error.code))
        else:
            outcomes.append(Outcome(item_id, True, text, item=item))
    return outcomes
