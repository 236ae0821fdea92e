"""What ``runworker``, ``runscheduler`` and ``runrelay`` do before they start serving.

Django runs the static system checks before a command's ``handle`` (an unknown ``LITEJOBS``
key, ``pgtrigger`` missing from ``INSTALLED_APPS``, a database that is not PostgreSQL: each an
error that stops the command with its message). ``prepare()`` then

- makes litejobs' log lines reach the terminal when ``LOGGING`` gives them nowhere to go
  (Python's last-resort handler drops INFO, so a runtime would otherwise print nothing);
- waits up to ``STARTUP_DATABASE_WAIT`` (30 s) while the database accepts no connection
  (containers started together: the database is still starting), and
- runs the database checks: litejobs.E042 (no connection within that wait, or the server
  refuses it for good: a wrong password, an unknown database), litejobs.E043 (litejobs'
  migrations are not applied) and litejobs.W043 (other apps' migrations are not applied).

An error stops the runtime with exit status 1 and the messages, never a traceback. The
database checks are not registered with Django's check framework: ``migrate`` runs the
database checks too, and must not be refused because the migrations it applies are missing.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from datetime import timedelta

from django.core import checks
from django.core.management.base import BaseCommand, SystemCheckError
from django.db import connections

from ..conf import settings
from ..core.durations import format_age, parse_duration
from ..jobs.queues import unused_queue
from .outage import is_outage, one_line
from .stopping import GracefulStop

logger = logging.getLogger(__name__)

#: The format of litejobs' own terminal handler (when the project's LOGGING sets none).
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def prepare(command: BaseCommand, runtime: str) -> bool:
    """Make logs visible, wait for the database, run the database checks (``SystemCheckError``
    on an error; warnings are printed to the command's stderr). Answers whether to go on:
    ``False`` when SIGTERM or SIGINT arrived while it waited (the command then exits 0)."""
    make_logs_visible()
    stop = threading.Event()
    GracefulStop(stop, logger, runtime).install()
    alias = settings.DATABASE
    wait = settings.or_default(
        "STARTUP_DATABASE_WAIT", lambda value: parse_duration(value, allow_zero=False)
    )
    if not wait_for_database(alias, StartupWait(runtime, describe_database(alias), wait), stop):
        logger.info("%s stopped before it started", runtime)
        return False
    messages = database_checks(alias, wait)
    errors = [m for m in messages if m.is_serious() and not m.is_silenced()]
    warnings = [m for m in messages if not m.is_serious() and not m.is_silenced()]
    if errors:
        raise SystemCheckError(_report(f"{runtime} did not start:", errors + warnings))
    if warnings:
        command.stderr.write(_report(f"{runtime} starts despite:", warnings))
    return True


def warn_unused_queues(command: BaseCommand, queues: list[str], where: str) -> list[str]:
    """Print a ``queue-unused`` warning (with "did you mean") for each queue no declaration
    uses: a worker serving only a misspelt queue would wait forever. Answers the warnings."""
    warnings = [warning for queue in queues if (warning := unused_queue(queue, where))]
    for warning in warnings:
        command.stderr.write(f"WARNING: {warning}")
    return warnings


def make_logs_visible() -> None:
    """Send litejobs' INFO lines to stderr unless the project's ``LOGGING`` handles them."""
    litejobs = logging.getLogger("litejobs")  # the parent of every litejobs logger
    if litejobs.hasHandlers():
        return  # the project's LOGGING decides where (and whether) they go
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    litejobs.addHandler(handler)
    if litejobs.level == logging.NOTSET:
        litejobs.setLevel(logging.INFO)


def describe_database(alias: str) -> str:
    """``'default' (postgresql 'shop' on 127.0.0.1:5432)``: which database a runtime uses, without
    credentials."""
    connection = connections[alias]
    config = connection.settings_dict
    host = config.get("HOST") or config.get("OPTIONS", {}).get("host") or "localhost"
    port = f":{config['PORT']}" if config.get("PORT") else ""
    return f"{alias!r} ({connection.vendor} {config.get('NAME')!r} on {host}{port})"


class StartupWait:
    """A runtime's wait for its database at start: its deadline, the pause before each new
    attempt, and its log (a line when it starts waiting, at most one per ``LOG_EVERY`` seconds
    after that, and one when the database answers)."""

    #: Seconds between two "still waits" lines.
    LOG_EVERY = 5.0
    #: The longest pause between two attempts (short: a starting database is used at once).
    PAUSE_MAX = 1.0

    def __init__(self, runtime: str, where: str, wait: timedelta) -> None:
        self.runtime = runtime
        self.where = where
        self.wait = wait
        self.started = time.monotonic()
        self.attempts = 0
        self.logged = 0.0

    def failed(self, error: BaseException) -> float | None:
        """Record a failed attempt; answers the pause before the next, ``None`` once the wait
        is over."""
        now = time.monotonic()
        left = self.started + self.wait.total_seconds() - now
        if left <= 0:
            return None
        if not self.attempts:
            logger.warning(
                "%s waits for the database %s to accept connections, up to %s "
                "(LITEJOBS['STARTUP_DATABASE_WAIT']) error=%s",
                self.runtime,
                self.where,
                format_age(self.wait),
                one_line(error),
            )
            self.logged = now
        elif now - self.logged >= self.LOG_EVERY:
            logger.warning(
                "%s still waits for the database for=%.0fs of %s error=%s",
                self.runtime,
                now - self.started,
                format_age(self.wait),
                one_line(error),
            )
            self.logged = now
        self.attempts += 1
        return min(0.25 * 2.0 ** min(self.attempts - 1, 10), self.PAUSE_MAX, left)

    def answered(self) -> None:
        """Record that the database answered; logged when the runtime waited for it."""
        if self.attempts:
            logger.warning(
                "%s: the database answered after %.1fs",
                self.runtime,
                time.monotonic() - self.started,
            )


def wait_for_database(alias: str, wait: StartupWait, stop: threading.Event) -> bool:
    """Answer ``True`` once the database answers, refuses for a reason waiting cannot heal, or
    ``wait`` is over (``database_checks`` then says why); ``False`` if ``stop`` is set
    meanwhile."""
    while not stop.is_set():
        try:
            connections[alias].ensure_connection()
        except Exception as error:
            if not is_outage(error) or refused_for_good(error):
                return True
            connections[alias].close()
            pause = wait.failed(error)
            if pause is None:
                return True
            stop.wait(pause)
            continue
        wait.answered()
        return True
    return False


#: What the server says (libpq carries no SQLSTATE at connect) when it refuses a connection in
#: a way waiting does not heal; a server that is starting, stopping or full is waited for.
REFUSED_FOR_GOOD = (
    "does not exist",  # the database or the role
    "password authentication failed",
    "no pg_hba.conf entry",
    "authentication failed",
    "permission denied",
)


def refused_for_good(error: BaseException) -> bool:
    """Whether a failed connection is a refusal by a server that answers (a wrong database
    name, user or password) rather than a server that cannot be reached."""
    text = str(error)
    return "FATAL:" in text and any(marker in text for marker in REFUSED_FOR_GOOD)


def database_checks(alias: str, waited: timedelta) -> list[checks.CheckMessage]:
    """litejobs.E042, E043 and W043 against the litejobs database, once the runtime waited
    ``waited`` for it to accept connections."""
    from django.db.migrations.executor import MigrationExecutor

    connection = connections[alias]
    where = describe_database(alias)
    try:
        connection.ensure_connection()
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception as error:
        return [unreachable(where, error, waited)]
    pending = [migration for migration, _backwards in plan]
    ours = [str(m) for m in pending if m.app_label == "litejobs"]
    others = [str(m) for m in pending if m.app_label != "litejobs"]
    messages: list[checks.CheckMessage] = []
    if ours:
        messages.append(
            checks.Error(
                f"[migrations-unapplied] litejobs' tables are not migrated in {where}: "
                f"{len(ours)} migration(s) are not applied ({_some(ours)}).",
                hint="Run `python manage.py migrate` first.",
                id="litejobs.E043",
            )
        )
    if others:
        messages.append(
            checks.Warning(
                f"[migrations-unapplied] {len(others)} migration(s) of other apps are not "
                f"applied in {where} ({_some(others)}): jobs that use their tables fail.",
                hint="Run `python manage.py migrate`.",
                id="litejobs.W043",
            )
        )
    return messages


def unreachable(where: str, error: BaseException, waited: timedelta) -> checks.Error:
    """litejobs.E042: no connection within the startup wait, or a server refusing it for good."""
    if is_outage(error) and not refused_for_good(error):
        what = (
            f"did not accept connections within {format_age(waited)} "
            "(LITEJOBS['STARTUP_DATABASE_WAIT'])"
        )
        hint = (
            "Start PostgreSQL, or fix HOST and PORT in DATABASES (or LITEJOBS['DATABASE']); if "
            "it starts slower than the runtimes (containers started together), raise "
            "LITEJOBS['STARTUP_DATABASE_WAIT']."
        )
    else:
        what = "refused the connection"
        hint = (
            "Fix DATABASES (or LITEJOBS['DATABASE']): the user, the password, and that the "
            "database exists (createdb NAME)."
        )
    return checks.Error(
        f"[database-unreachable] The litejobs database {where} {what}: {one_line(error)}",
        hint=hint,
        id="litejobs.E042",
    )


def _some(names: list[str], shown: int = 3) -> str:
    more = f", and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _report(header: str, messages: list[checks.CheckMessage]) -> str:
    lines = [header]
    for message in sorted(messages, key=lambda m: -m.level):
        lines.append(f"{'ERROR' if message.is_serious() else 'WARNING'}: {message}")
    return "\n".join(lines) + "\n"
