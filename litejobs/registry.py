"""The job declarations known to this process, by durable name."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .exceptions import DeclarationError, UnknownJob

if TYPE_CHECKING:
    from .jobs import JobDefinition

#: Stored rows of Django ``@task`` functions are named ``task:<module path>``.
TASK_PREFIX = "task:"

_jobs: dict[str, JobDefinition] = {}
_declaration_errors: list[tuple[str, Exception]] = []


def register(definition: JobDefinition) -> None:
    """Add a declaration; two declarations may not share a name."""
    existing = _jobs.get(definition.name)
    if existing is not None and existing.func is not definition.func:
        raise DeclarationError(
            f"Two jobs are named {definition.name!r} ({existing.func.__module__} and "
            f"{definition.func.__module__}). Give one of them another name=.",
            code="job-duplicate",
        )
    _jobs[definition.name] = definition


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


def unregister(name: str) -> None:
    """Forget a declaration (tests that declare jobs on the fly)."""
    _jobs.pop(name, None)


#: The declaration modules of every installed app, imported in this order (schedules name jobs).
DECLARATION_MODULES = ("jobs", "workflows", "schedules")


def autodiscover() -> None:
    """Import every installed app's ``jobs.py``, then its ``schedules.py``, keeping invalid
    declarations for the checks.

    A ``DeclarationError`` (a job without a key, an invalid schedule) does not stop Django from
    starting: it is reported by ``manage.py check`` (litejobs.E002/E003/E005/E006), which every
    litejobs command runs first, so no worker or scheduler starts with it.
    """
    _declaration_errors.clear()
    for kind in DECLARATION_MODULES:
        import_declarations(kind, _declaration_errors)


def import_declarations(kind: str, errors: list[tuple[str, Exception]]) -> None:
    """Import every installed app's ``<kind>.py``; a refused declaration goes to ``errors``."""
    from importlib import import_module
    from importlib.util import find_spec

    from django.apps import apps

    for app in apps.get_app_configs():
        module = f"{app.name}.{kind}"
        if find_spec(module) is None:
            continue
        try:
            import_module(module)
        except DeclarationError as error:
            errors.append((module, error))


def declaration_errors() -> list[tuple[str, Exception]]:
    """The declarations autodiscovery refused, as (module, error)."""
    return list(_declaration_errors)
