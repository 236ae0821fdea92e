"""The ``LITEJOBS`` settings dict, read at access time so ``override_settings`` works.

Every key is optional. Durations accept ``"30s"``-style strings, numbers of seconds or
``timedelta``; ``settings.<NAME>`` answers the raw value, ``settings.duration(NAME)`` the
parsed ``timedelta``.
"""

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from .core.durations import parse_duration
from .core.errors import LitejobsError
from .core.project import litejobs_settings

DEFAULTS: dict[str, Any] = {
    # The database alias litejobs stores its rows in (and runs atomic job bodies on).
    "DATABASE": "default",
    # How long a claim is valid without renewal; a lost worker's jobs run again after it.
    "LEASE": "60s",
    # How often a worker renews its leases and its Worker row (well below LEASE); each
    # heartbeat also looks whether jobs are due, the backstop of LISTEN/NOTIFY.
    "HEARTBEAT": "20s",
    # The backstop poll of an idle worker when no heartbeat looked for due jobs within it
    # (LISTEN/NOTIFY wakes it before that).
    "POLL_INTERVAL": "30s",
    # The most jobs a worker claims in one statement, one for each thread free to start it;
    # while a backlog of quick jobs lasts, a claim takes as many as its threads got through in
    # the last 20 ms, up to 8 times this.
    "CLAIM_BATCH": 16,
    # Per-attempt timeout of a job that declares none (independent of LEASE: a run is renewed
    # while it lives, and cancelled if its worker cannot renew it).
    "DEFAULT_TIMEOUT": "5m",
    # Rolling deploys: a job this worker's code cannot run (its name unknown here, or its
    # payload version newer) is handed back uncounted for a worker that can; dead after this.
    "UNKNOWN_JOB_GRACE": "1h",
    # Retry policy of a job that declares none (see litejobs.Retry).
    "DEFAULT_RETRY": {"attempts": 3, "backoff": "exponential", "base": "2s", "max": "5m"},
    # How long a timed-out body has to stop after its cancellation fires before it is abandoned.
    "TIMEOUT_GRACE": "10s",
    # How long SIGTERM waits for running jobs before cancelling them.
    "DRAIN_TIMEOUT": "30s",
    # Batched acknowledgement of atomic=False jobs: at most this many per UPDATE ...
    "ACK_BATCH": 100,
    # ... flushed at least this often.
    "ACK_FLUSH": "10ms",
    # Database outage handling: retry backoff cap, and how often the outage is logged.
    "OUTAGE_BACKOFF_MAX": "30s",
    "OUTAGE_LOG_INTERVAL": "60s",
    # How long runworker, runscheduler and runrelay wait at start for a database that accepts
    # no connection (containers started together) before they exit 1 with litejobs.E042;
    # once running, they ride out outages however long.
    "STARTUP_DATABASE_WAIT": "30s",
    # Largest accepted JSON payload, in bytes of its UTF-8 encoding.
    "MAX_PAYLOAD_BYTES": 65536,
    # Rates every job of a queue shares: {"partners": {"limit": 100, "per": "1m"}} (or a
    # litejobs.Rate) starts at most 100 jobs of the queue in any minute across every worker.
    "QUEUE_RATES": {},
    # How long finished rows are kept before ``litejobs purge`` removes them.
    "RETENTION": {"done": "7d", "cancelled": "7d", "dead": "30d"},
    # Rows deleted per purge statement (purges run in bounded batches).
    "PURGE_BATCH": 5000,
    # litejobs prepares its hot statements server-side (enqueue, claim, completion, step
    # records), on Django's connections too, where nothing else is prepared. Turn off behind
    # a connection pooler that cannot keep prepared statements.
    "PREPARED_STATEMENTS": True,
    # Dotted path of the clock class (see litejobs.clock).
    "CLOCK": "litejobs.clock.SystemClock",
    # runscheduler: the leader lease (another replica takes over this long after a leader dies),
    "SCHEDULER_LEASE": "15s",
    # how often each replica renews (or tries to take) the lease and the leader plans,
    "SCHEDULER_TICK": "1s",
    # how far ahead the leader plans occurrences (their jobs wait, scheduled, until due),
    "SCHEDULER_HORIZON": "5s",
    # and how late an instant may still be planned and run; older ones are missed (misfire).
    "SCHEDULER_MISFIRE_GRACE": "60s",
    # The name of this deployment; manual jobs declare where they may run (runs_where=).
    "DEPLOYMENT": "local",
    # The outbox relay: runworker runs one beside its jobs (``--no-relay`` or False: only
    # ``manage.py runrelay`` publishes),
    "RELAY_IN_WORKER": True,
    # messages published per transaction,
    "OUTBOX_BATCH": 500,
    # the leader lease (another relay takes over this long after the leader stops renewing),
    "RELAY_LEASE": "15s",
    # the idle relay's backstop poll (NOTIFY wakes it at once when a message commits; the poll
    # only finds a batch a crashed leader left while nothing new is staged),
    "RELAY_POLL_INTERVAL": "5m",
    # and how long published messages and finished webhook deliveries are kept.
    "OUTBOX_RETENTION": "7d",
    # Outbound webhooks: the queue of delivery jobs,
    "WEBHOOK_QUEUE": "webhooks",
    # how long one HTTP request may take in all (connect, TLS, send, the whole answer),
    "WEBHOOK_TIMEOUT": "10s",
    # the retry policy of a delivery (a Retry-After answer moves its next attempt),
    "WEBHOOK_RETRY": {"attempts": 10, "backoff": "exponential", "base": "30s", "max": "2h"},
    # consecutive failed attempts (any delivery) after which an endpoint is disabled,
    "WEBHOOK_MAX_FAILURES": 20,
    # and hosts that may resolve to loopback or private addresses (e.g. ["127.0.0.1"]).
    "WEBHOOK_ALLOWED_HOSTS": [],
    # Ingest pipelines: the queue of their drain and file-import jobs,
    "INGEST_QUEUE": "ingest",
    # and how long set-aside (dropped and errored) records, finished file imports with their
    # error reports, and overflow events are kept (the hourly counts are kept for good).
    "INGEST_RETENTION": "30d",
    # Reports: the queue of the job that writes each run in the worker (litejobs.report_run),
    "REPORT_QUEUE": "reports",
    # the storage (an alias of Django's STORAGES) their outputs are written to, a directory
    # per tenant under litejobs/reports/ (keep it private: downloads go through litejobs' view),
    "REPORT_STORAGE": "default",
    # and how long a download link stays valid, at most a day (each download checks the user
    # again; a link never outlives the output it names).
    "REPORT_LINK_TTL": "5m",
    # A bearer token a Prometheus scraper may send to read /metrics (litejobs.views.metrics);
    # None: only signed-in staff users may. At least 32 characters (litejobs.E060).
    "METRICS_TOKEN": None,
}

#: The shortest ``METRICS_TOKEN`` accepted (a shorter one grants nothing; litejobs.E060).
METRICS_TOKEN_MIN = 32
#: Whole-number settings and the range each may take (litejobs.E004 reports a value outside it).
COUNT_SETTINGS = {
    "CLAIM_BATCH": (1, 1000),
    "ACK_BATCH": (1, 10_000),
    "MAX_PAYLOAD_BYTES": (1, 100_000_000),
    "PURGE_BATCH": (1, 1_000_000),
}


def is_count(value: object, low: int, high: int) -> bool:
    """Whether ``value`` is a whole number from ``low`` to ``high``."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


class Settings:
    """Attribute access to ``LITEJOBS`` merged over ``DEFAULTS``.

    An unknown key (a typo) is never raised here: reading settings happens while Django starts
    (job declarations read their defaults at import), so raising would break every command,
    ``manage.py check`` included. The check litejobs.E041 reports it instead, with the key it
    most likely misspells, and no runtime starts with it.
    """

    # The settings read as they are (the others are durations: ``duration(NAME)``). These are
    # annotations only: every read goes through ``__getattr__``.
    DATABASE: str
    CLOCK: str
    DEPLOYMENT: str
    WEBHOOK_QUEUE: str
    INGEST_QUEUE: str
    CLAIM_BATCH: int
    ACK_BATCH: int
    MAX_PAYLOAD_BYTES: int
    PURGE_BATCH: int
    OUTBOX_BATCH: int
    WEBHOOK_MAX_FAILURES: int
    PREPARED_STATEMENTS: bool
    RELAY_IN_WORKER: bool
    WEBHOOK_ALLOWED_HOSTS: list[str]

    #: The project's ``LITEJOBS`` dict once Django's settings are configured: every enqueue
    #: and every job reads settings, and Django's lazy settings are slow to ask each time.
    #: ``forget`` drops it when a setting changes (``override_settings``, a test's settings).
    _configured: Mapping[str, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        if name not in DEFAULTS:
            raise AttributeError(f"Unknown litejobs setting {name!r}.")
        return self.configured().get(name, DEFAULTS[name])

    def configured(self) -> Mapping[str, Any]:
        """The project's ``LITEJOBS`` dict (empty when unset, or when it is not a dict: the
        check litejobs.E041 reports that). Outside a Django project (no settings module: a
        script that verifies webhook signatures) every key has its default."""
        found = self._configured
        if found is None:
            found = litejobs_settings()
            if found is None:
                return {}
            self._configured = found
        return found

    def forget(self, **kwargs: object) -> None:
        """Drop the cached ``LITEJOBS`` dict (on ``setting_changed``)."""
        if kwargs.get("setting", "LITEJOBS") == "LITEJOBS":
            self._configured = None

    def unknown_keys(self) -> list[str]:
        """Keys of ``LITEJOBS`` that are no litejobs setting."""
        return sorted(str(key) for key in self.configured() if key not in DEFAULTS)

    def or_default(self, name: str, parse: Callable[[Any], Any]) -> Any:
        """``parse(setting)``, or ``parse(its default)`` when the configured value is refused.

        For values read while modules import (job declarations read their defaults then):
        raising there would break every command, ``manage.py check`` included, while the
        settings checks (litejobs.E004, E020) report the invalid value and no runtime starts.
        """
        try:
            return parse(getattr(self, name))
        except LitejobsError:
            return parse(DEFAULTS[name])

    def duration_or_default(self, name: str) -> timedelta:
        """``duration(name)``, or the default's when the configured value is refused (for
        values read while modules import, as ``or_default``)."""
        duration: timedelta = self.or_default(name, lambda value: _positive_duration(value, name))
        return duration

    def count(self, name: str) -> int:
        """A whole-number setting (``COUNT_SETTINGS``), or its default when the configured
        value is out of its range: declarations read ``MAX_PAYLOAD_BYTES`` while modules
        import, and enqueues must judge payloads as they did (litejobs.E004 reports it)."""
        value: int = getattr(self, name)
        default: int = DEFAULTS[name]
        return value if is_count(value, *COUNT_SETTINGS[name]) else default

    def metrics_token(self) -> str | None:
        """``METRICS_TOKEN`` when it is a usable token (a string of 32 characters or more)."""
        token = self.METRICS_TOKEN
        return token if isinstance(token, str) and len(token) >= METRICS_TOKEN_MIN else None

    def duration(self, name: str) -> timedelta:
        """A duration setting as a ``timedelta`` (refuses zero and negatives)."""
        return _positive_duration(getattr(self, name), name)

    def retention(self, state: str) -> timedelta:
        """How long finished rows in ``state`` are kept."""
        retention = {**DEFAULTS["RETENTION"], **self.RETENTION}
        shown = f"LITEJOBS['RETENTION'][{state!r}]"
        return parse_duration(retention[state], name=shown)


def _positive_duration(value: Any, name: str) -> timedelta:
    shown = f"LITEJOBS[{name!r}]"
    return parse_duration(value, name=shown, allow_zero=False)


settings = Settings()
