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


@checks.register("litejobs")
def check_declarations(app_configs=None, **kwargs):
    """litejobs.E002 (a job without a key) and E003 (another invalid declaration)."""
    found = []
    for module, error in registry.declaration_errors():
        code = getattr(error, "code", "declaration-invalid")
        found.append(
            checks.Error(
                f"{module}: {error.args[0]}",
                hint="Fix the declaration; the worker will not start until it is valid.",
                obj=module,
                id="litejobs.E002" if code == "key-missing" else "litejobs.E003",
            )
        )
    return found


@checks.register("litejobs")
def check_settings(app_configs=None, **kwargs):
    """litejobs.E004: settings that cannot work together."""
    try:
        lease = settings.duration("LEASE")
        heartbeat = settings.duration("HEARTBEAT")
        for name in ("POLL_INTERVAL", "DEFAULT_TIMEOUT", "TIMEOUT_GRACE", "ACK_FLUSH"):
            settings.duration(name)
    except LitejobsError as error:
        return [checks.Error(str(error), id="litejobs.E004")]
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
