"""System checks (``manage.py check``): litejobs problems with stable ids and the fix."""

from django.core import checks
from django.db import connections

from . import registry
from .conf import settings
from .exceptions import LitejobsError


@checks.register(checks.Tags.database, "litejobs")
def check_database(app_configs=None, **kwargs):
    """litejobs.E001: the litejobs database must be PostgreSQL."""
    alias = settings.DATABASE
    if alias not in connections.settings:
        return [
            checks.Error(
                f"LITEJOBS['DATABASE'] names {alias!r}, which is not in DATABASES.",
                hint="Set LITEJOBS['DATABASE'] to one of your DATABASES aliases.",
                id="litejobs.E001",
            )
        ]
    vendor = connections[alias].vendor
    if vendor != "postgresql":
        return [
            checks.Error(
                f"litejobs needs PostgreSQL; the database {alias!r} is {vendor}.",
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
def check_declarations(app_configs=None, **kwargs):
    """litejobs.E002 (a job without a key), E003 (another invalid declaration), E005 (an
    invalid schedule, ``schedule-invalid``) and E006 (a manual job without a guard,
    ``job-guard-missing``), found while importing every app's ``jobs.py`` and ``schedules.py``.
    """
    found = []
    for module, error in registry.declaration_errors():
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


@checks.register("litejobs")
def check_settings(app_configs=None, **kwargs):
    """litejobs.E004: settings that cannot work together."""
    try:
        lease = settings.duration("LEASE")
        heartbeat = settings.duration("HEARTBEAT")
        for name in (
            "POLL_INTERVAL",
            "DEFAULT_TIMEOUT",
            "TIMEOUT_GRACE",
            "ACK_FLUSH",
            "UNKNOWN_JOB_GRACE",
        ):
            settings.duration(name)
        scheduler_lease = settings.duration("SCHEDULER_LEASE")
        scheduler_tick = settings.duration("SCHEDULER_TICK")
        settings.duration("SCHEDULER_HORIZON")
        settings.duration("SCHEDULER_MISFIRE_GRACE")
    except LitejobsError as error:
        return [checks.Error(str(error), id="litejobs.E004")]
    if scheduler_tick * 2 > scheduler_lease:
        return [
            checks.Error(
                f"LITEJOBS['SCHEDULER_TICK'] ({settings.SCHEDULER_TICK}) must be at most half "
                f"of LITEJOBS['SCHEDULER_LEASE'] ({settings.SCHEDULER_LEASE}), or the leader's "
                "lease lapses between renewals.",
                hint="Lower SCHEDULER_TICK or raise SCHEDULER_LEASE (the default is 1s within "
                "15s).",
                id="litejobs.E004",
            )
        ]
    if heartbeat * 2 > lease:
        return [
            checks.Error(
                f"LITEJOBS['HEARTBEAT'] ({settings.HEARTBEAT}) must be at most half of "
                f"LITEJOBS['LEASE'] ({settings.LEASE}), or leases lapse between renewals.",
                hint="Lower HEARTBEAT or raise LEASE (the default is 20s within 60s).",
                id="litejobs.E004",
            )
        ]
    return []


@checks.register("litejobs")
def check_work_queues(app_configs=None, **kwargs):
    """litejobs.E010 (an invalid ``work_queue`` or ``score_rule`` declaration in a
    ``queues.py``, ``work-queue-invalid``) and E011 (a queue whose score rule no installed app
    declares, ``score-rule-unknown``)."""
    from . import queues

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


#: The check id of each kind of workflow problem.
WORKFLOW_CHECK_IDS = {
    "behavior-unrecorded": "litejobs.E007",
    "use-case-mapped-twice": "litejobs.E008",
    "compensation-missing": "litejobs.E009",
}


@checks.register("litejobs")
def check_workflows(app_configs=None, **kwargs):
    """litejobs.E007 (a workflow step or compensation maps to no registered use case,
    ``behavior-unrecorded``), E008 (a use case mapped by two steps) and E009 (a step that
    declares no compensation)."""
    from . import workflows

    return [
        checks.Error(
            f"[{kind}] {message}",
            hint="Register the use case with @use_case(...), map each use case from one step, "
            "and declare every step's compensation (Compensation.none(reason=...) if none).",
            obj=where,
            id=WORKFLOW_CHECK_IDS[kind],
        )
        for kind, where, message in workflows.problems()
    ]


@checks.register("litejobs")
def check_outbox_settings(app_configs=None, **kwargs):
    """litejobs.E020: outbox and webhook settings that cannot work (``settings-invalid``)."""
    from .retry import Retry

    problems = []

    def refuse(message: str, hint: str) -> None:
        problems.append(checks.Error(message, hint=hint, id="litejobs.E020"))

    try:
        for name in ("RELAY_LEASE", "RELAY_POLL_INTERVAL", "OUTBOX_RETENTION", "WEBHOOK_TIMEOUT"):
            settings.duration(name)
        Retry.coerce(settings.WEBHOOK_RETRY)
    except LitejobsError as error:
        refuse(str(error), "Use durations such as '15s' and a Retry's fields (see README).")
    batch = settings.OUTBOX_BATCH
    if not isinstance(batch, int) or isinstance(batch, bool) or not 1 <= batch <= 10_000:
        refuse(
            f"LITEJOBS['OUTBOX_BATCH'] must be a whole number from 1 to 10000; got {batch!r}.",
            "The default, 500, keeps each relay transaction short.",
        )
    failures = settings.WEBHOOK_MAX_FAILURES
    if not isinstance(failures, int) or isinstance(failures, bool) or failures < 1:
        refuse(
            f"LITEJOBS['WEBHOOK_MAX_FAILURES'] must be a whole number of 1 or more; got "
            f"{failures!r}.",
            "It is how many consecutive failed attempts disable an endpoint (default 20).",
        )
    hosts = settings.WEBHOOK_ALLOWED_HOSTS
    if not isinstance(hosts, list | tuple) or not all(isinstance(h, str) and h for h in hosts):
        refuse(
            "LITEJOBS['WEBHOOK_ALLOWED_HOSTS'] must be a list of host names or addresses.",
            'For a local receiver in development: ["127.0.0.1", "localhost"].',
        )
    if not isinstance(settings.RELAY_IN_WORKER, bool):
        refuse(
            "LITEJOBS['RELAY_IN_WORKER'] must be True or False.",
            "False: only `manage.py runrelay` publishes the outbox.",
        )
    return problems


@checks.register("litejobs")
def check_bulk_actions(app_configs=None, **kwargs):
    """litejobs.E012: a bulk money action that cannot work — one acting on a work queue no
    installed app declares (``bulk-action-invalid``), or django-otp's TOTP app missing
    (``bulk-otp-missing``). An invalid ``bulk_money_action(...)`` makes its ``queues.py``
    fail to import, which litejobs.E010 reports with the ``[bulk-action-invalid]`` code."""
    from . import bulk

    return [
        checks.Error(
            f"{module}: [{code}] {message}",
            hint="Declare the work queue in a queues.py (or fix queue=), and install "
            "django-otp's TOTP app: confirmations need a code from a device.",
            obj=module,
            id="litejobs.E012",
        )
        for code, module, message in bulk.problems()
    ]
