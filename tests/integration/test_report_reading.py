"""A report run read a page ahead on a thread of its own leaves no connection behind."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.conftest import wait_for
from tests.reports_helpers import RANGE, reader, sales
from tests.testapp import reports

pytestmark = pytest.mark.django_db(transaction=True)


def sessions() -> int:
    """Connections to the test database other than this one."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def test_a_run_closes_the_connection_its_pages_were_read_on(run_worker, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    sales("north", 23)
    run = reports.sales.request(user=reader("ann", "north"), params=RANGE)
    before = sessions()
    run_worker(queues=["reports"])
    run.refresh_from_db()
    assert (run.state, run.row_count, run.parts) == ("done", 23, 6)
    # A closed connection's server process leaves pg_stat_activity a moment after the client
    # hung up (later still on a loaded machine); one left open stays there for good.
    wait_for(lambda: sessions() == before, timeout=10, what="the reading connection to end")
