"""The job declarations known to this process, by durable name."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .core.spelling import did_you_mean
from .exceptions import DeclarationError, LitejobsError, UnknownJob

if TYPE_CHECKING:
    from .jobs import JobDefinition

#: Stored rows of Django ``@task`` functions are named ``task:<module path>``.
TASK_PREFIX = "task:"

_jobs: dict[str, JobDefinition] = {}
_declaration_errors: list[tuple[str, Exception]] = []
#: Names of jobs declared after Django started (``apps.ready``): in a module that startup does
#: not import (a views.py, a services.py), which a worker therefore never knows.
_declared_late: set[str] = set()


def register(definition: JobDefinition) -> None:
    """Add a declaration; two declarations may not share a name.

    A module imported again (its first import failed half-way, and another module imports it)
    declares its functions again: the new declaration of the same function replaces the old.
    """
    from django.apps import apps

    existing = _jobs.get(definition.name)
    if existing is not None and _origin(existing.func) != _origin(definition.func):
        raise DeclarationError(
            f"Two jobs are named {definition.name!r} ({existing.func.__module__} and "
            f"{definition.func.__module__}). Give one of them another name=.",
            code="job-duplicate",
        )
    _jobs[definition.name] = definition
    if apps.ready:
        _declared_late.add(definition.name)
    else:
        _declared_late.discard(definition.name)


def _origin(func) -> tuple[str, str]:
    """Where a function is defined: the same for each import of its module."""
    return func.__module__, func.__qualname__


def get(name: str) -> JobDefinition:
    """The declaration stored rows call ``name``; ``UnknownJob`` if no installed app has it."""
    try:
        return _jobs[name]
    except KeyError:
        pass
    if name.startswith(TASK_PREFIX):
        from .tasks import definition_for_task

        return definition_for_task(name)
    raise UnknownJob(
        f"No installed app declares a job named {name!r}. It was renamed or removed while "
        "rows still name it: restore the declaration (or keep the old name with name=), "
        "then retry the job; or cancel it.",
    )


def all_jobs() -> list[JobDefinition]:
    """Every registered declaration, by name."""
    return [_jobs[name] for name in sorted(_jobs)]


def declared_queues() -> dict[str, list[str]]:
    """Every job queue something declares, with what uses it: job declarations (schedules run
    their job's queue), ``LITEJOBS['WEBHOOK_QUEUE']``, and the ``QUEUES`` of Django Tasks
    backends on litejobs (``["default"]`` unless configured)."""
    from django.conf import settings as django_settings

    from .conf import settings

    users: dict[str, list[str]] = {}
    for definition in all_jobs():
        users.setdefault(definition.queue, []).append(f"job {definition.name!r}")
    users.setdefault(str(settings.WEBHOOK_QUEUE), []).append("LITEJOBS['WEBHOOK_QUEUE']")
    for alias, config in (getattr(django_settings, "TASKS", None) or {}).items():
        if config.get("BACKEND") == "litejobs.tasks.LitejobsBackend":
            for queue in config.get("QUEUES") or ["default"]:
                users.setdefault(queue, []).append(f"TASKS[{alias!r}]")
    return users


def unused_queue(queue: str, where: str) -> str | None:
    """A warning (``queue-unused``) when no declaration uses ``queue``: a typo, most likely."""
    known = declared_queues()
    if queue in known:
        return None
    return (
        f"[queue-unused] {where} names queue {queue!r}, which no declaration uses (declared: "
        f"{', '.join(sorted(known))}).{did_you_mean(queue, known)}"
    )


def unregister(name: str) -> None:
    """Forget a declaration (tests that declare jobs on the fly)."""
    _jobs.pop(name, None)
    _declared_late.discard(name)


def declared_late() -> list[JobDefinition]:
    """Jobs declared after Django started, by name: no worker imports their modules, so their
    runs would die ``unknown-job`` (reported by the check litejobs.W043)."""
    return [_jobs[name] for name in sorted(_declared_late) if name in _jobs]


#: The declaration modules of every installed app, imported in this order (schedules name jobs).
DECLARATION_MODULES = ("jobs", "workflows", "schedules")


def autodiscover() -> None:
    """Import every installed app's ``jobs.py``, then its ``schedules.py``, keeping invalid
    declarations for the checks.

    A refused declaration (a job without a key, an invalid schedule: any ``LitejobsError``)
    does not stop Django from starting: it is reported by ``manage.py check``
    (litejobs.E002/E003/E005/E006), which every litejobs command runs first, so no worker or
    scheduler starts with it.
    """
    _declaration_errors.clear()
    for kind in DECLARATION_MODULES:
        import_declarations(kind, _declaration_errors)


def import_declarations(kind: str, errors: list[tuple[str, Exception]]) -> None:
    """Import every installed app's ``<kind>.py``; a refused declaration goes to ``errors``.

    A module that imports a broken one (a ``schedules.py`` importing its app's ``jobs.py``)
    fails with the same error; it is kept once, under the module that failed first.
    """
    from importlib import import_module
    from importlib.util import find_spec

    from django.apps import apps

    for app in apps.get_app_configs():
        module = f"{app.name}.{kind}"
        if find_spec(module) is None:
            continue
        try:
            import_module(module)
        except LitejobsError as error:
            if not any(_same_error(error, seen) for _, seen in errors):
                errors.append((module, error))


def _same_error(one: Exception, other: Exception) -> bool:
    return type(one) is type(other) and one.args == other.args


def declaration_errors() -> list[tuple[str, Exception]]:
    """The declarations autodiscovery refused, as (module, error)."""
    return list(_declaration_errors)
