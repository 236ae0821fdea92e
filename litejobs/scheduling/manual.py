"""Manual jobs: work a person runs (not a timetable), declared with where and who may run it.

```python
from litejobs import manual
manual("orders.rebuild-ledger", job=rebuild_ledger, runs_where=("production",),
       guard=lambda actor, now: actor in LEDGER_OWNERS or "only the ledger owners may run it",
       description="Rebuild the ledger from orders after a data repair.")
```

Declared in an app's ``schedules.py`` beside its schedules. ``runs_where`` names the
deployments it may run in (``LITEJOBS["DEPLOYMENT"]``; ``"*"`` for any); ``guard(actor, now)``
decides who may run it and when: ``True`` allows, ``False`` or a string (the reason) refuses.
A manual job without a guard is refused at import and reported by ``manage.py check`` as
``job-guard-missing``. ``run`` (``manage.py litejobs run-manual NAME --reason ...``) checks
both, then enqueues the job through the ordinary path, logging who ran it and why.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..conf import settings
from ..core import clock
from ..core.registry import Registry
from ..exceptions import DeclarationError, GuardRefused, InvalidInput
from ..jobs.declarations import JobDefinition
from ..jobs.enqueue import Enqueued
from .options import NAME_PATTERN

logger = logging.getLogger(__name__)


def _named_twice(name: str, existing: ManualJob, new: ManualJob) -> DeclarationError:
    return DeclarationError(
        f"Two manual jobs are named {name!r} ({existing.module} and {new.module}).",
        code="declaration-invalid",
    )


def _unknown(name: str) -> InvalidInput:
    known = ", ".join(sorted(_manual)) or "none"
    return InvalidInput(
        f"No manual job is named {name!r} (declared: {known}).", code="manual-unknown"
    )


_manual: Registry[ManualJob] = Registry("manual job", duplicate=_named_twice, missing=_unknown)


@dataclass(frozen=True, eq=False)
class ManualJob:
    """A job a person runs: where it may run and the guard that decides who and when."""

    name: str
    job: JobDefinition
    runs_where: tuple[str, ...]
    guard: Callable[[str, datetime], bool | str]
    description: str = ""
    module: str = ""

    def allows_here(self) -> bool:
        """Whether this deployment (``LITEJOBS["DEPLOYMENT"]``) is one it may run in."""
        return "*" in self.runs_where or settings.DEPLOYMENT in self.runs_where


def manual(
    name: str,
    *,
    job: JobDefinition,
    runs_where: Iterable[str] | str,
    guard: Callable[[str, datetime], bool | str] | None = None,
    description: str = "",
) -> ManualJob:
    """Declare a manual job; ``guard`` is required (``job-guard-missing`` without it)."""
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise DeclarationError(
            f"Manual job {name!r}: a name is 1-100 letters, digits or '_.-'.",
            code="declaration-invalid",
        )
    if not isinstance(job, JobDefinition):
        raise DeclarationError(
            f"Manual job {name!r}: job= must be a function declared with @job.",
            code="declaration-invalid",
        )
    if guard is None or not callable(guard):
        raise DeclarationError(
            f"Manual job {name!r} has no guard: declare guard=lambda actor, now: ... answering "
            "True when that person may run it at that time (or a string saying why not), e.g. "
            "guard=lambda actor, now: actor in {'alice', 'bob'}.",
            code="job-guard-missing",
        )
    where = (runs_where,) if isinstance(runs_where, str) else tuple(runs_where)
    if not where or not all(isinstance(w, str) and w.strip() for w in where):
        raise DeclarationError(
            f"Manual job {name!r}: runs_where= names the deployments it may run in (matched "
            "against LITEJOBS['DEPLOYMENT']), e.g. ('production',), or '*' for any.",
            code="declaration-invalid",
        )
    module = str(sys._getframe(1).f_globals.get("__name__", ""))
    return _manual.register(name, ManualJob(name, job, where, guard, description, module))


def get(name: str) -> ManualJob:
    """The manual job ``name``; ``InvalidInput`` (``manual-unknown``) when none is declared."""
    return _manual[name]


def unregister(name: str) -> None:
    """Forget a manual job (tests)."""
    _manual.unregister(name)


def run(name: str, *, by: str, reason: str, arguments: dict[str, Any] | None = None) -> Enqueued:
    """Run a manual job now, if this deployment and its guard allow ``by`` to.

    Refusals are ``GuardRefused`` (``manual-refused``) naming which rule said no; nothing is
    enqueued. The run is an ordinary enqueue (deduplicated by the job's own key).
    """
    declared = get(name)
    if not isinstance(by, str) or not by.strip():
        raise InvalidInput("Say who runs it: pass by= (the CLI --by).", code="by-missing")
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidInput(
            f"Say why manual job {name!r} runs: give a reason (--reason).", code="reason-required"
        )
    now = clock.now()
    if not declared.allows_here():
        raise GuardRefused(
            f"Manual job {name!r} runs only in {', '.join(declared.runs_where)}; this deployment "
            f"is {settings.DEPLOYMENT!r} (LITEJOBS['DEPLOYMENT'])."
        )
    verdict = declared.guard(by.strip(), now)
    if verdict is not True:
        why = verdict if isinstance(verdict, str) and verdict else "its guard said no"
        logger.info("manual job refused name=%s by=%s why=%r", name, by, why)
        raise GuardRefused(f"Manual job {name!r} may not be run by {by.strip()!r} now: {why}.")
    enqueued = declared.job.enqueue(**(arguments or {}))
    logger.info(
        "manual job run name=%s job=%s deduped=%s by=%s reason=%r",
        name,
        enqueued.id,
        enqueued.deduped,
        by,
        reason.strip(),
    )
    return enqueued
