"""The bench's scratch database: beside the project's, on the same server, migrated, dropped.

The bench never touches the project's litejobs rows. ``ScratchDatabase`` creates
``<name>_litejobs_bench`` on the same server (so the same durability settings apply), points
the litejobs database alias of this process at it, migrates it, and on the way out points the
alias back and drops it (unless kept with ``--keep-db``, as Django's ``--keepdb`` does).
``durability(variant)`` sets ``synchronous_commit`` on every connection the alias opens from
then on (libpq's ``options``), until the way out restores the alias's own ``OPTIONS``.
"""

from __future__ import annotations

from typing import Any, cast

from django.conf import settings as django_settings
from django.core.management import call_command
from django.db import DatabaseError, connections

from .errors import BenchError

SUFFIX = "_litejobs_bench"
#: Django's own connection options, which psycopg does not take.
_DJANGO_ONLY = ("cursor_factory", "context", "prepare_threshold")


class ScratchDatabase:
    """A context manager: while inside, the alias ``alias`` uses the scratch database."""

    def __init__(self, alias: str, *, keep: bool = False) -> None:
        self.alias = alias
        self.keep = keep
        connection = connections[alias]
        self.original = connection.settings_dict["NAME"]
        if not self.original:
            raise BenchError(
                f"DATABASES[{alias!r}] has no NAME; the bench names its scratch database after it."
            )
        # PostgreSQL limits names (63 bytes): its backend always answers a length.
        self.name = f"{self.original}{SUFFIX}"[-cast(int, connection.ops.max_name_length()) :]
        self.original_options = connection.settings_dict.get("OPTIONS", {})
        self.session_options = ""

    def __enter__(self) -> ScratchDatabase:
        connection = connections[self.alias]
        quoted = connection.ops.quote_name(self.name)
        try:
            with connection._nodb_cursor() as cursor:
                if not self.keep:
                    cursor.execute(f"DROP DATABASE IF EXISTS {quoted} WITH (FORCE)")
                cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [self.name])
                if cursor.fetchone() is None:
                    cursor.execute(f"CREATE DATABASE {quoted}")
        except DatabaseError as error:
            raise BenchError(
                f"Could not create the scratch database {self.name!r} ({error}). The bench "
                "needs a role that may CREATE DATABASE on the project's server."
            ) from error
        self._use(self.name)
        try:
            call_command("migrate", database=self.alias, interactive=False, verbosity=0)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._set_options(self.original_options)
        self._use(self.original)
        if self.keep:
            return
        connection = connections[self.alias]
        with connection._nodb_cursor() as cursor:
            cursor.execute(
                f"DROP DATABASE IF EXISTS {connection.ops.quote_name(self.name)} WITH (FORCE)"
            )

    def _use(self, name: str) -> None:
        connection = connections[self.alias]
        connection.close()
        connection.settings_dict["NAME"] = name
        django_settings.DATABASES[self.alias]["NAME"] = name

    def durability(self, variant: str) -> str:
        """From now on the alias's connections run with ``synchronous_commit = variant``.

        Appends ``-c synchronous_commit=...`` to the libpq ``options`` of the alias's own
        ``OPTIONS`` (a later ``-c`` wins) and closes this process's connection, so the next
        query reconnects with it. Answers the ``options`` string, for the worker processes.
        """
        configured = self.original_options.get("options", "")
        self.session_options = f"{configured} -c synchronous_commit={variant}".strip()
        self._set_options({**self.original_options, "options": self.session_options})
        return self.session_options

    def _set_options(self, options: dict[str, Any]) -> None:
        connection = connections[self.alias]
        connection.close()
        connection.settings_dict["OPTIONS"] = options
        database: dict[str, Any] = django_settings.DATABASES[self.alias]
        database["OPTIONS"] = options

    def psycopg_params(self) -> dict[str, Any]:
        """Connection keywords for psycopg alone (the floors), on the scratch database."""
        params = connections[self.alias].get_connection_params()
        for option in _DJANGO_ONLY:
            params.pop(option, None)
        return params
