"""The demo project's tests: the demo's embedded PostgreSQL (used when ``DATABASE_URL`` is
unset) stops at the end of the session that started it."""

import os

from project import database


def pytest_sessionfinish(session, exitstatus):
    if not os.environ.get("DATABASE_URL") and database.started_here:
        database.stop_embedded()
