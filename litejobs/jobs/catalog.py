"""The one lookup of what runs a stored job: ``get(name)``, and ``run_of(job)`` for a claim.

``@job`` declarations register here by their durable name. A stored row whose name no
declaration holds may still be runnable through a **resolver** an add-on registered for a
name prefix (the Django Tasks backend: rows named ``task:<module path>``). An **override** may
change how a claimed job runs and what its context tells the body (a scheduled occurrence runs
with its schedule's retry and timeout, and its body sees ``ctx.occurrence``). The catalog knows
of neither: they register what they add, so every lookup — the worker's, the admin's, the
payload redaction's — answers the same.
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from django.apps import apps

from ..core.discovery import Discovery
from ..core.registry import Registry
from ..core.retry import Retry
from ..exceptions import DeclarationError, UnknownJob
from .claims import ClaimedJob

logger = logging.getLogger(__name__)


class Definition(Protocol):
    """What a stored job runs with, whoever declared it (a ``@job``, a Django Task)."""

    name: str
    queue: str
    retry: Retry
    atomic: bool
    sensitive: tuple[str, ...]
    dead_letter: bool
    version: int

    @property
    def timeout(self) -> timedelta: ...

    @property
    def module(self) -> str: ...

    @property
    def max_attempts(self) -> int: ...

    def invoke(self, ctx: Any, payload: Mapping[str, Any], version: int | None = None) -> Any: ...


@dataclass(frozen=True)
class Run:
    """What a claimed job runs as: its definition, and what its context tells the body."""

    definition: Definition
    #: The scheduled occurrence it serves (``ctx.occurrence``), if any.
    occurrence: Any = None


def _origin(definition: Any) -> tuple[str, str]:
    """Where a job's function is defined: the same for each import of its module."""
    return definition.func.__module__, definition.func.__qualname__


def _duplicate(name: str, existing: Any, new: Any) -> DeclarationError:
    return DeclarationError(
        f"Two jobs are named {name!r} ({existing.func.__module__} and "
        f"{new.func.__module__}). Give one of them another name=.",
        code="job-duplicate",
    )


#: The ``@job`` declarations (``JobDefinition``) by name.
_jobs: Registry[Definition] = Registry("job", origin=_origin, duplicate=_duplicate)
#: Names of jobs declared after Django started (``apps.ready``): in a module that startup does
#: not import (a views.py, a services.py), which a worker therefore never knows.
_declared_late: set[str] = set()
#: Name prefix -> ``resolve(name)``: the definition of a stored row no declaration names.
resolvers: Registry[Callable[[str], Definition]] = Registry("job resolver", origin=None)
#: Name -> ``override(job, definition)``: a ``Run`` for the claimed job, or None to leave it.
overrides: Registry[Callable[[ClaimedJob, Definition], Run | None]] = Registry(
    "run override", origin=None
)
#: Name -> ``fields(payload)``: the fields of a stored payload to hide beyond the declaration's
#: ``sensitive`` (a job that carries an outbox message hides what the message's topic declares).
redactions: Registry[Callable[[Any], tuple[str, ...]]] = Registry("payload redaction", origin=None)
#: The declaration modules of every installed app, imported in this order (schedules name jobs).
discovery = Discovery("jobs", "workflows", "schedules")


def register(definition: Any) -> None:
    """Add a declaration; two declarations may not share a name.

    A module imported again (its first import failed half-way, and another module imports it)
    declares its functions again: the new declaration of the same function replaces the old.
    """
    _jobs.register(definition.name, definition)
    if apps.ready:
        _declared_late.add(definition.name)
    else:
        _declared_late.discard(definition.name)


def get(name: str) -> Definition:
    """The definition stored rows called ``name`` run with; ``UnknownJob`` if nothing here
    declares or resolves it."""
    declared = _jobs.get(name)
    if declared is not None:
        return declared
    for prefix, resolve in resolvers.items():
        if name.startswith(prefix):
            return resolve(name)
    raise UnknownJob(
        f"No installed app declares a job named {name!r}. It was renamed or removed while "
        "rows still name it: restore the declaration (or keep the old name with name=), "
        "then retry the job; or cancel it.",
    )


def run_of(job: ClaimedJob) -> Run:
    """How a claimed job runs: its definition (``UnknownJob`` if none), as overridden.

    A job whose name nothing here declares yet is looked for once in the module its row
    records, as Django's own Tasks do: a ``@job`` in an app's ``services.py`` runs although
    startup never imports that module.
    """
    try:
        definition = get(job.name)
    except UnknownJob:
        if not import_declaring(job.module):
            raise
        definition = get(job.name)
    for override in overrides.values():
        run = override(job, definition)
        if run is not None:
            return run
    return Run(definition)


#: Modules ``import_declaring`` looked in already (imported, or refused): once per process.
_looked_in: set[str] = set()
_MODULE_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def import_declaring(module: str) -> bool:
    """Import ``module``, the declaring module a job row records, when it lies inside an
    installed app's package (never an arbitrary path: a row's text decides nothing else);
    answers whether it was imported now. Each module is tried once per process."""
    if not module or module in _looked_in:
        return False
    _looked_in.add(module)
    if not _MODULE_PATH.fullmatch(module) or apps.get_containing_app_config(module) is None:
        logger.warning(
            "job module not imported module=%r: it lies in no installed app", module[:200]
        )
        return False
    try:
        importlib.import_module(module)
    except Exception:
        logger.exception("job module import failed module=%s", module)
        return False
    return True


def sensitive_of(definition: Definition, payload: Any) -> tuple[str, ...]:
    """The fields of ``payload`` to hide wherever a run of ``definition`` shows (admin, CLI,
    error texts, logs): the declaration's ``sensitive`` and what an add-on adds for this
    payload; a dotted name is a field inside a field."""
    more = redactions.get(definition.name)
    return definition.sensitive if more is None else (*definition.sensitive, *more(payload))


def all_jobs() -> list[Any]:
    """Every declared job, by name."""
    return _jobs.all()


def unregister(name: str) -> None:
    """Forget a declaration (tests that declare jobs on the fly)."""
    _jobs.unregister(name)
    redactions.unregister(name)
    _declared_late.discard(name)


def declared_late() -> list[Any]:
    """Jobs declared after Django started outside every installed app, by name: no worker
    imports their modules (one inside an app is imported by a worker that meets the name),
    so their runs would die ``unknown-job`` (reported by the check litejobs.W042)."""
    return [
        _jobs[name]
        for name in sorted(_declared_late)
        if name in _jobs and apps.get_containing_app_config(_jobs[name].module) is None
    ]


def autodiscover() -> None:
    """Import every installed app's ``jobs.py``, ``workflows.py``, then ``schedules.py``,
    keeping refused declarations for the checks (litejobs.E002/E003/E005/E006): a refused
    declaration does not stop Django, and no worker or scheduler starts with it."""
    discovery.run()


def declaration_errors() -> list[tuple[str, Exception]]:
    """The declarations autodiscovery refused, as (module, error)."""
    return discovery.errors()
