"""System checks (``manage.py check``): litejobs problems with stable ids and the fix.

The add-ons' checks are theirs (``litejobs.workqueues.checks``,
``litejobs.bulk.checks``); litejobs' app registers them with these.
"""

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

from django.apps import AppConfig, apps
from django.conf import settings as django_settings
from django.core import checks
from django.db import connections
from django.urls import get_resolver
from django.utils.module_loading import import_string

from . import workflows
from .conf import COUNT_SETTINGS, DEFAULTS, METRICS_TOKEN_MIN, is_count, settings
from .core.retry import Retry
from .core.spelling import close_match, did_you_mean
from .exceptions import LitejobsError
from .jobs import catalog
from .jobs import queues as job_queues
from .jobs.declarations import queue_name
from .management.precedence import RUNTIME_COMMANDS, shadowed_commands


@checks.register("litejobs")
def check_database(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> Sequence[checks.CheckMessage]:
    """litejobs.E001: the litejobs database must be an alias of DATABASES
    (``settings-invalid``) on PostgreSQL (``postgresql-required``).

    Not tagged ``database``: it reads the configured engine without connecting, so plain
    ``manage.py check`` (which skips database checks) and every runtime report it.
    """
    alias = settings.DATABASE
    if not isinstance(alias, str) or alias not in connections.settings:
        return [
            checks.Error(
                f"[settings-invalid] LITEJOBS['DATABASE'] names {alias!r}, which is not in "
                "DATABASES.",
                hint="Set LITEJOBS['DATABASE'] to one of your DATABASES aliases.",
                id="litejobs.E001",
            )
        ]
    vendor = connections[alias].vendor
    if vendor != "postgresql":
        return [
            checks.Error(
                f"[postgresql-required] litejobs needs PostgreSQL; the database {alias!r} is "
                f"{vendor}.",
                hint="Point DATABASES[...]['ENGINE'] at django.db.backends.postgresql "
                "(PostgreSQL 14 or newer), or LITEJOBS['DATABASE'] at an alias that is.",
                id="litejobs.E001",
            )
        ]
    return []


#: Check ids of declaration errors by their code; any other code is litejobs.E003.
DECLARATION_CHECK_IDS = {
    "key-missing": "litejobs.E002",
    "schedule-invalid": "litejobs.E005",
    "job-guard-missing": "litejobs.E006",
}


@checks.register("litejobs")
def check_declarations(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> Sequence[checks.CheckMessage]:
    """litejobs.E002 (a job without a key), E003 (another invalid declaration), E005 (an
    invalid schedule, ``schedule-invalid``) and E006 (a manual job without a guard,
    ``job-guard-missing``), found while importing every app's ``jobs.py`` and ``schedules.py``.
    """
    found = []
    for module, error in catalog.declaration_errors():
        code = getattr(error, "code", "declaration-invalid")
        found.append(
            checks.Error(
                f"{module}: [{code}] {error.args[0]}",
                hint="Fix the declaration; no worker or scheduler starts until it is valid.",
                obj=module,
                id=DECLARATION_CHECK_IDS.get(code, "litejobs.E003"),
            )
        )
    return found


#: Duration settings (each positive); the relay's and webhooks' are litejobs.E020's.
DURATION_SETTINGS = (
    "LEASE",
    "HEARTBEAT",
    "POLL_INTERVAL",
    "DEFAULT_TIMEOUT",
    "TIMEOUT_GRACE",
    "DRAIN_TIMEOUT",
    "ACK_FLUSH",
    "OUTAGE_BACKOFF_MAX",
    "OUTAGE_LOG_INTERVAL",
    "STARTUP_DATABASE_WAIT",
    "SCHEDULER_LEASE",
    "SCHEDULER_TICK",
    "SCHEDULER_HORIZON",
    "SCHEDULER_MISFIRE_GRACE",
    "UNKNOWN_JOB_GRACE",
    "INGEST_RETENTION",
    "REPORT_LINK_TTL",
)

#: The relay's and webhooks' duration settings (each positive; litejobs.E020's).
OUTBOX_DURATION_SETTINGS = (
    "RELAY_LEASE",
    "RELAY_POLL_INTERVAL",
    "OUTBOX_RETENTION",
    "WEBHOOK_TIMEOUT",
)


class _Refusals:
    """The ``settings-invalid`` errors one check finds (``found``), each under its id."""

    def __init__(self, check_id: str) -> None:
        self.check_id = check_id
        self.found: list[checks.CheckMessage] = []

    def refuse(self, message: str, hint: str) -> None:
        self.found.append(
            checks.Error(f"[settings-invalid] {message}", hint=hint, id=self.check_id)
        )

    def durations(self, names: Sequence[str]) -> dict[str, Any]:
        """Refuse each of the duration settings ``names`` that is not a positive duration;
        answers the valid ones parsed."""
        parsed = {}
        for name in names:
            try:
                parsed[name] = settings.duration(name)
            except LitejobsError as error:
                self.refuse(error.args[0], f"Use a positive duration such as {DEFAULTS[name]!r}.")
        return parsed

    def count(self, name: str, low: int, high: int, hint: str) -> None:
        """Refuse the setting ``name`` unless it is a whole number from ``low`` to ``high``."""
        value = getattr(settings, name)
        if not is_count(value, low, high):
            self.refuse(
                f"LITEJOBS[{name!r}] must be a whole number from {low} to {high}; got {value!r}.",
                hint,
            )

    def retry(self, name: str) -> None:
        """Refuse the retry policy setting ``name`` unless it makes a ``Retry``."""
        try:
            Retry.coerce(getattr(settings, name))
        except LitejobsError as error:
            self.refuse(
                f"LITEJOBS[{name!r}]: {error.args[0]}",
                f"Give a Retry's fields (see Retry in the README); the default is "
                f"{DEFAULTS[name]!r}.",
            )


@checks.register("litejobs")
def check_setting_names(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> Sequence[checks.CheckMessage]:
    """litejobs.E041: ``LITEJOBS`` is not a dict (``settings-invalid``), or has a key that is no
    litejobs setting (``settings-unknown``: a typo, named with the key it most likely misspells).
    The key is ignored until then; no runtime starts with it."""
    configured = getattr(django_settings, "LITEJOBS", None)
    if configured is not None and not isinstance(configured, Mapping):
        return [
            checks.Error(
                f"[settings-invalid] LITEJOBS must be a dict; got a {type(configured).__name__}.",
                hint='Write LITEJOBS = {"LEASE": "60s", ...} (every key is optional).',
                id="litejobs.E041",
            )
        ]
    return [
        checks.Error(
            f"[settings-unknown] LITEJOBS has an unknown key {key!r}; litejobs ignores it."
            f"{did_you_mean(key, DEFAULTS)}",
            hint=f"Rename or remove it. The keys are: {', '.join(DEFAULTS)}.",
            id="litejobs.E041",
        )
        for key in settings.unknown_keys()
    ]


@checks.register("litejobs")
def check_settings(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> Sequence[checks.CheckMessage]:
    """litejobs.E004 (``settings-invalid``): a setting whose value cannot work, or settings that
    cannot work together."""
    problems = _Refusals("litejobs.E004")
    refuse = problems.refuse
    durations = problems.durations(DURATION_SETTINGS)
    for name, (low, high) in COUNT_SETTINGS.items():
        problems.count(name, low, high, f"The default is {DEFAULTS[name]}.")
    problems.retry("DEFAULT_RETRY")
    retention = settings.RETENTION
    states = DEFAULTS["RETENTION"]
    if not isinstance(retention, Mapping) or not set(retention) <= set(states):
        unknown = sorted(set(retention) - set(states)) if isinstance(retention, Mapping) else []
        refuse(
            f"LITEJOBS['RETENTION'] must be a dict of {', '.join(states)} to durations; got "
            f"{retention!r}.{did_you_mean(str(unknown[0]), states) if unknown else ''}",
            f"The default is {states!r}.",
        )
    else:
        for state in states:
            try:
                settings.retention(state)
            except LitejobsError as error:
                refuse(error.args[0], f"The default is {states[state]!r}.")
    if not isinstance(settings.PREPARED_STATEMENTS, bool):
        refuse(
            f"LITEJOBS['PREPARED_STATEMENTS'] must be True or False; got "
            f"{settings.PREPARED_STATEMENTS!r}.",
            "The default is True.",
        )
    deployment = settings.DEPLOYMENT
    if not isinstance(deployment, str) or not deployment.strip():
        refuse(
            f"LITEJOBS['DEPLOYMENT'] must be a non-empty name; got {deployment!r}.",
            "Name this deployment, e.g. 'production' (manual jobs declare where they run).",
        )
    try:
        import_string(settings.CLOCK)
    except (ImportError, AttributeError, TypeError, ValueError) as error:
        refuse(
            f"LITEJOBS['CLOCK'] {settings.CLOCK!r} cannot be imported ({error}).",
            "Remove it (the default is litejobs.clock.SystemClock) or fix the dotted path.",
        )
    scheduler_lease, scheduler_tick = (
        durations.get(n) for n in ("SCHEDULER_LEASE", "SCHEDULER_TICK")
    )
    if scheduler_lease and scheduler_tick and scheduler_tick * 2 > scheduler_lease:
        refuse(
            f"LITEJOBS['SCHEDULER_TICK'] ({settings.SCHEDULER_TICK}) must be at most half "
            f"of LITEJOBS['SCHEDULER_LEASE'] ({settings.SCHEDULER_LEASE}), or the leader's "
            "lease lapses between renewals.",
            "Lower SCHEDULER_TICK or raise SCHEDULER_LEASE (the default is 1s within 15s).",
        )
    lease, heartbeat = durations.get("LEASE"), durations.get("HEARTBEAT")
    if lease and heartbeat and heartbeat * 2 > lease:
        refuse(
            f"LITEJOBS['HEARTBEAT'] ({settings.HEARTBEAT}) must be at most half of "
            f"LITEJOBS['LEASE'] ({settings.LEASE}), or leases lapse between renewals.",
            "Lower HEARTBEAT or raise LEASE (the default is 20s within 60s).",
        )
    return problems.found


@checks.register("litejobs")
def check_pgtrigger_installed(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> Sequence[checks.CheckMessage]:
    """litejobs.E040 (``pgtrigger-missing``): litejobs' database triggers (fences, wake-ups,
    append-only records) are declared with django-pgtrigger, whose app must be installed."""
    if apps.is_installed("pgtrigger"):
        return []
    return [
        checks.Error(
            "[pgtrigger-missing] litejobs declares its database triggers with django-pgtrigger, "
            "and 'pgtrigger' is not in INSTALLED_APPS: migrations would not install them.",
            hint='Add "pgtrigger" to INSTALLED_APPS (anywhere in the list).',
            id="litejobs.E040",
        )
    ]


#: The check id of each kind of workflow problem.
WORKFLOW_CHECK_IDS = {
    "behavior-unrecorded": "litejobs.E007",
    "use-case-mapped-twice": "litejobs.E008",
    "compensation-missing": "litejobs.E009",
}


@checks.register("litejobs")
def check_workflows(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> Sequence[checks.CheckMessage]:
    """litejobs.E007 (a workflow step or compensation maps to no registered use case,
    ``behavior-unrecorded``), E008 (a use case mapped by two steps) and E009 (a step that
    declares no compensation)."""
    return [
        checks.Error(
            f"[{problem.code}] {problem.message}",
            hint="Register the use case with @use_case(...), map each use case from one step, "
            "and declare every step's compensation (Compensation.none(reason=...) if none).",
            obj=problem.where,
            id=WORKFLOW_CHECK_IDS[problem.code],
        )
        for problem in workflows.problems()
    ]


@checks.register("litejobs")
def check_outbox_settings(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> Sequence[checks.CheckMessage]:
    """litejobs.E020: outbox and webhook settings that cannot work (``settings-invalid``)."""
    problems = _Refusals("litejobs.E020")
    refuse = problems.refuse
    problems.durations(OUTBOX_DURATION_SETTINGS)
    problems.retry("WEBHOOK_RETRY")
    try:
        queue_name(settings.WEBHOOK_QUEUE, what="LITEJOBS['WEBHOOK_QUEUE']")
    except LitejobsError as error:
        refuse(
            error.args[0],
            "Name the queue of webhook delivery jobs (the default is 'webhooks'); the workers "
            "that serve it deliver the webhooks.",
        )
    problems.count(
        "OUTBOX_BATCH", 1, 10_000, "The default, 500, keeps each relay transaction short."
    )
    problems.count(
        "WEBHOOK_MAX_FAILURES",
        1,
        1_000_000,
        "It is how many consecutive failed attempts disable an endpoint (default 20).",
    )
    hosts = settings.WEBHOOK_ALLOWED_HOSTS
    if not isinstance(hosts, list | tuple) or not all(isinstance(h, str) and h for h in hosts):
        refuse(
            "LITEJOBS['WEBHOOK_ALLOWED_HOSTS'] must be a list of host names or addresses; got "
            f"{hosts!r}.",
            'For a local receiver in development: ["127.0.0.1", "localhost"].',
        )
    if not isinstance(settings.RELAY_IN_WORKER, bool):
        refuse(
            f"LITEJOBS['RELAY_IN_WORKER'] must be True or False; got {settings.RELAY_IN_WORKER!r}.",
            "False: only `manage.py runrelay` publishes the outbox.",
        )
    return problems.found


@checks.register("litejobs")
def check_shadowed_commands(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> Sequence[checks.CheckMessage]:
    """litejobs.W040: another installed app ships a command named like one of litejobs'
    runtimes (channels' ``runworker``); ``manage.py NAME`` runs litejobs' whatever the order of
    ``INSTALLED_APPS``, so the other app's command is only reachable through its class. Said by
    ``check`` and by the runtime NAME, not by every other command."""
    return [
        checks.Warning(
            f"[command-shadowed] The `{name}` command of {app} is shadowed: `manage.py {name}` "
            f"runs litejobs' {RUNTIME_COMMANDS[name]}, whatever the order of INSTALLED_APPS.",
            hint=f"To run the one of {app}, call its class: call_command(import_module("
            f"'{app}.management.commands.{name}').Command(), ...). Silence this warning with "
            "SILENCED_SYSTEM_CHECKS = ['litejobs.W040'].",
            obj=app,
            id="litejobs.W040",
        )
        for app, name in shadowed_commands()
    ]


@checks.register("litejobs")
def check_queue_names(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> Sequence[checks.CheckMessage]:
    """litejobs.W041 (``queue-unused``): a queue only one declaration uses, close to a queue
    others use (``queue="emials"`` beside ``"emails"``): a worker serving the intended queue
    never runs that job."""
    declared = job_queues.declared_queues()
    found = []
    for queue, users in sorted(declared.items()):
        if len(users) != 1:
            continue
        match = close_match(queue, declared)
        if match is not None:
            found.append(
                checks.Warning(
                    f"[queue-unused] {users[0]} uses queue {queue!r}, which no other "
                    f"declaration uses. Did you mean {match!r}?",
                    hint=f"Fix queue= (a worker started with --queues {match} never runs it), or "
                    "silence this with SILENCED_SYSTEM_CHECKS = ['litejobs.W041'].",
                    obj=queue,
                    id="litejobs.W041",
                )
            )
    return found


@checks.register("litejobs")
def check_job_discovery(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> Sequence[checks.CheckMessage]:
    """litejobs.W042 (``job-undiscovered``): a ``@job`` declared in a module Django's startup
    does not import (found here once the URLconf is imported, as ``runserver`` does). A worker
    runs ``django.setup()`` and every app's ``jobs.py``, never that module: its runs would die
    ``unknown-job``."""
    # Import the views and what they import; Django's URL checks report a broken URLconf.
    with contextlib.suppress(Exception):
        get_resolver().url_patterns  # noqa: B018
    return [
        checks.Warning(
            f"[job-undiscovered] Job {definition.name!r} is declared in "
            f"{definition.func.__module__}, which Django's startup does not import: workers "
            "never know it, so its runs die with unknown-job.",
            hint=f"Declare it in {_jobs_module(definition.func.__module__)} (discovered like "
            f"admin.py), or import {definition.func.__module__} from there.",
            obj=definition.func.__module__,
            id="litejobs.W042",
        )
        for definition in catalog.declared_late()
    ]


def _jobs_module(module: str) -> str:
    """Where the jobs of ``module``'s app are discovered: ``<app>/jobs.py``."""
    app = apps.get_containing_app_config(module)
    return f"{app.name.replace('.', '/')}/jobs.py" if app else "an installed app's jobs.py"


@checks.register("litejobs")
def check_metrics_token(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> Sequence[checks.CheckMessage]:
    """litejobs.E060: ``LITEJOBS['METRICS_TOKEN']`` is neither None nor a string of at least
    32 characters (the token is not quoted)."""
    token = settings.METRICS_TOKEN
    if token is None or settings.metrics_token() is not None:
        return []
    return [
        checks.Error(
            f"[settings-invalid] LITEJOBS['METRICS_TOKEN'] must be None or a string of at least "
            f"{METRICS_TOKEN_MIN} characters (got a {type(token).__name__}"
            f"{f' of {len(token)} characters' if isinstance(token, str) else ''}).",
            hint='Generate one, e.g. python -c "import secrets; print(secrets.token_urlsafe(32))", '
            "and give it to the scraper; or leave it unset so only staff users read /metrics.",
            id="litejobs.E060",
        )
    ]
