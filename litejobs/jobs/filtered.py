"""The operator's verbs over a filter: retry, cancel, promote or delete every job a
``JobFilter`` matches, at most a limit per call, after a ``preview`` counted them.

``bulk`` applies each verb by the single verb's state rules (``litejobs.jobs.operations``): the
jobs it may change are locked and changed in one transaction with the operator action log row
that names them, and a preview's digest makes it change nothing when the matching jobs changed
since the operator looked (``filter-changed``). It logs on the operator verbs' logger.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils.translation import ngettext

from ..conf import settings
from ..core import clock
from ..core.enums import LIVE, JobState, OperatorVerb
from ..exceptions import InvalidInput, LitejobsError
from ..models import Job
from . import operations
from .actionlog import Actor, record
from .operations import PROMOTABLE, RETRYABLE, ActionResult

#: The operator verbs' logger (``docs/operating``), which every bulk call logs on.
logger = logging.getLogger("litejobs.jobs.operations")


def _alias() -> str:
    return settings.DATABASE


def _jobs() -> QuerySet[Job]:
    return Job.objects.using(_alias())


#: Jobs one bulk call acts on when no limit is given, and the most it may be given.
BULK_DEFAULT = 100
BULK_MAX = 1000
#: The verbs ``bulk`` applies.
BULK_VERBS = (OperatorVerb.RETRY, OperatorVerb.CANCEL, OperatorVerb.PROMOTE, OperatorVerb.DELETE)
#: Matching jobs a preview reads, oldest first: it counts them (``10000+`` past it) and ``bulk``
#: checks that they are still the jobs that match.
PREVIEW_CAP = 10_000


@dataclass(frozen=True)
class JobFilter:
    """Which jobs a bulk action matches: every given field must hold (states: any of them)."""

    states: tuple[str, ...] = ()
    name: str = ""
    queue: str = ""
    tenant: str | None = None
    ids: tuple[int, ...] = ()

    @property
    def is_empty(self) -> bool:
        """No condition at all: it would match every job."""
        return not (self.states or self.name or self.queue or self.ids) and self.tenant is None

    def as_dict(self) -> dict[str, Any]:
        """The conditions given, as the action log keeps them."""
        given = {
            "state": list(self.states),
            "name": self.name,
            "queue": self.queue,
            "tenant": self.tenant,
            "ids": list(self.ids),
        }
        return {key: value for key, value in given.items() if value not in ("", [], None)}

    def apply(self, jobs: QuerySet[Job]) -> QuerySet[Job]:
        """``jobs`` narrowed to the matching ones."""
        if self.states:
            jobs = jobs.filter(state__in=self.states)
        if self.name:
            jobs = jobs.filter(name=self.name)
        if self.queue:
            jobs = jobs.filter(queue=self.queue)
        if self.tenant is not None:
            jobs = jobs.filter(tenant=self.tenant)
        if self.ids:
            jobs = jobs.filter(pk__in=self.ids)
        return jobs


@dataclass(frozen=True)
class BulkPreview:
    """The jobs a filter matches as an operator looks before acting: how many (``capped``: more
    than ``PREVIEW_CAP``) and ``seen``, a digest of which, that ``bulk`` compares before it acts."""

    count: int
    capped: bool
    seen: str


def preview(filter: JobFilter) -> BulkPreview:
    """What ``filter`` matches now (its oldest ``PREVIEW_CAP`` jobs, one read of their ids)."""
    ids = list(filter.apply(_jobs()).order_by("pk").values_list("pk", flat=True)[: PREVIEW_CAP + 1])
    digest = hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()
    return BulkPreview(min(len(ids), PREVIEW_CAP), len(ids) > PREVIEW_CAP, digest)


def _changed_since(filter: JobFilter, seen: str) -> InvalidInput | None:
    """``filter-changed`` when the jobs ``filter`` matches are not those a preview ``seen``."""
    now = preview(filter)
    if now.seen == seen:
        return None
    count = f"{now.count}+" if now.capped else str(now.count)
    return InvalidInput(
        f"The jobs matching the filter changed since you looked: it matches {count} now. "
        "Nothing was changed; check the new count and apply again.",
        code="filter-changed",
    )


def _actionable(verb: OperatorVerb, now: datetime) -> QuerySet[Job]:
    """The jobs ``verb`` would change, by the single verb's state rules; a job it already
    changed no longer matches (a promoted job is due, a running job's cancel is requested)."""
    if verb == OperatorVerb.RETRY:
        return _jobs().filter(state__in=RETRYABLE)
    if verb == OperatorVerb.CANCEL:
        return _jobs().filter(state__in=LIVE).exclude(state=JobState.RUNNING, cancel_requested=True)
    if verb == OperatorVerb.PROMOTE:
        return _jobs().filter(state__in=PROMOTABLE, run_at__gt=now)
    return _jobs().exclude(state=JobState.RUNNING)


def _each(verb: Callable[[int, str], ActionResult], ids: list[int], by: str) -> list[int]:
    """Apply a single verb to each id (each in its savepoint); answers the ids it changed.
    A refusal (a retry guard, a live key) leaves that job as it was."""
    changed = []
    for job_id in ids:
        try:
            with transaction.atomic(using=_alias()):
                verb(job_id, by)
        except LitejobsError:
            continue
        changed.append(job_id)
    return changed


def _apply_bulk(verb: OperatorVerb, ids: list[int], by: str, now: datetime) -> list[int]:
    """Change the locked ``ids`` (each one the verb may change: its lock keeps it so) and
    answer the ids changed: promote and delete in one statement each; retry and cancel
    through the single verb per job (their guards and the running job's cancel request)."""
    if verb == OperatorVerb.PROMOTE:
        _jobs().filter(pk__in=ids).update(run_at=now)
        return ids
    if verb == OperatorVerb.DELETE:
        kept = operations.followed(ids, by)
        deleting = [pk for pk in ids if pk not in kept]
        _jobs().filter(pk__in=deleting).delete()
        return deleting
    single = operations.retry_one if verb == OperatorVerb.RETRY else operations.cancel_one
    return _each(single, ids, by)


def check_limit(limit: int) -> int:
    """``limit`` when it is from 1 to ``BULK_MAX``, else ``InvalidInput`` (``limit-invalid``)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= BULK_MAX:
        raise InvalidInput(
            f"A bulk action changes 1 to {BULK_MAX} jobs per call; got {limit!r}. Run it again "
            "for the rest (it answers how many still match).",
            code="limit-invalid",
        )
    return limit


def bulk(
    verb: OperatorVerb,
    filter: JobFilter,
    *,
    limit: int = BULK_DEFAULT,
    by: str,
    reason: str = "",
    user_id: int | None = None,
    seen: str | None = None,
) -> dict[str, int]:
    """Apply ``verb`` (retry, cancel, promote, delete) to at most ``limit`` jobs matching
    ``filter`` that the verb may change, oldest first, in one transaction with its log row
    (which names the jobs it changed).

    Answers ``{"affected": n, "remaining": n}``: how many it changed, and how many matching
    jobs it may still change (call again until 0). Jobs another transaction holds are skipped,
    not waited for. A filter without any condition is refused (``filter-missing``): it would
    match every job. Given ``seen`` (a ``preview``'s), it acts only while the filter still
    matches the jobs that preview saw, else changes nothing (``filter-changed``).
    """
    actor = Actor(operations.check_by(by), user_id, reason)
    if verb not in BULK_VERBS:
        raise InvalidInput(
            f"{verb!r} is not a bulk job action; use one of "
            f"{', '.join(str(v) for v in BULK_VERBS)}.",
            code="verb-invalid",
        )
    if filter.is_empty:
        raise InvalidInput(
            "A bulk action needs at least one condition (state, name, queue, tenant or ids): "
            "without one it would change every job.",
            code="filter-missing",
        )
    limit = check_limit(limit)
    now = clock.now()
    matching = filter.apply(_actionable(verb, now))
    with transaction.atomic(using=_alias()):
        ids = list(
            matching.order_by("pk")
            .select_for_update(skip_locked=True)
            .values_list("pk", flat=True)[:limit]
        )
        # Checked once the jobs to change are locked: none of them can leave the filter now.
        changed = _changed_since(filter, seen) if seen is not None else None
        if changed is not None:
            raise changed
        acted = _apply_bulk(verb, ids, actor.by, now) if ids else []
        affected = len(acted)
        record(
            verb,
            actor,
            affected=affected,
            job_ids=acted,
            filter={**filter.as_dict(), "limit": limit},
        )
        remaining = matching.count()
    logger.info(
        "jobs bulk %s affected=%s remaining=%s filter=%s by=%s",
        verb,
        affected,
        remaining,
        filter.as_dict(),
        actor.by,
    )
    return {"affected": affected, "remaining": remaining}


def bulk_summary(counts: Mapping[str, int]) -> str:
    """What a ``bulk`` call did, in words: ``1 job changed; 3 matching jobs remain (...)``."""
    affected, remaining = counts["affected"], counts["remaining"]
    changed = ngettext("%(n)d job changed", "%(n)d jobs changed", affected) % {"n": affected}
    if not remaining:
        return f"{changed}; no matching job remains."
    left = ngettext("%(n)d matching job remains", "%(n)d matching jobs remain", remaining) % {
        "n": remaining
    }
    return f"{changed}; {left} (run it again for the rest)."
