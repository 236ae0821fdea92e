"""Time the admin job listing's pages over the rows of ``load_listing_rows.sql``.

DATABASE_URL=postgres://.../scratch PYTHONPATH=. python scripts/measure_listing.py [runs]

For a scratch database only: it adds the superuser ``listing-measure`` (no usable password)
to log in with. ``LISTING_DAY`` names the day of the single-day cases (YYYY-MM-DD).

Each case is fetched once to warm the cache, then ``runs`` times (5 by default) through
Django's test client as a superuser; prints the median and the range of the whole request,
the median time spent in SQL statements (the rest is Python: the rendering of 50 rows and
the filters) and the number of statements, in milliseconds.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from functools import partial
from typing import Any
from urllib.parse import parse_qsl

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402
from django.urls import reverse  # noqa: E402

#: A day about three months before the newest row of ``load_listing_rows.sql``.
DAY = os.environ.get("LISTING_DAY", "2026-09-01")
CASES: dict[str, dict[str, str]] = {
    "first page": {},
    "a page deep in the history": {"after": "300000"},
    "key": {"key": "order:123456"},
    "name": {"name": "mail.digest"},
    "queue": {"queue": "billing"},
    "tenant": {"tenant": "tenant-42"},
    "payload": {"payload": "customer.id=42"},
    "created day, three months back": {"created_at_from": DAY, "created_at_to": DAY},
    "finished day, three months back": {"finished_at_from": DAY, "finished_at_to": DAY},
    "created day, its next page": {"created_at_from": DAY, "created_at_to": DAY, "after": ""},
    "created from a day on (most rows)": {"created_at_from": "2026-07-01"},
    "created up to a day (the oldest rows)": {"created_at_to": "2026-06-10"},
    "state=dead": {"state__exact": "dead"},
    "state=dead, its next page": {"state__exact": "dead", "after": ""},
    "state=dead, finished day": {
        "state__exact": "dead",
        "finished_at_from": DAY,
        "finished_at_to": DAY,
    },
}


def main(runs: int) -> None:
    """Print one line per case."""
    setup_test_environment()
    user, created = get_user_model().objects.get_or_create(
        username="listing-measure", defaults={"is_staff": True, "is_superuser": True}
    )
    if created:
        user.set_unusable_password()
        user.save()
    client = Client()
    client.force_login(user)
    url = reverse("admin:litejobs_job_changelist")
    for label, params in CASES.items():
        params = dict(params)
        if params.get("after") == "":
            # The second page: the older-jobs link of the first.
            first = client.get(url, {k: v for k, v in params.items() if k != "after"})
            link = first.context["cl"].older_url
            params = dict(_query(link))
        timings, sql, statements = measure(client, url, params, runs)
        print(
            f"{label:40} {statistics.median(timings):6.0f} ms "
            f"[{min(timings):.0f}-{max(timings):.0f}]  SQL {statistics.median(sql):6.1f} ms  "
            f"{statements} statements"
        )


def measure(
    client: Client, url: str, params: dict[str, str], runs: int
) -> tuple[list[float], list[float], int]:
    """Milliseconds of each run (after one warm-up), of its statements, and how many the
    last one sent."""
    client.get(url, params)
    timings, sql = [], []
    for _ in range(runs):
        spent = [0.0]
        with (
            CaptureQueriesContext(connection) as captured,
            connection.execute_wrapper(partial(_timed, spent)),
        ):
            started = time.perf_counter()
            response = client.get(url, params)
            timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.status_code  # noqa: S101
        sql.append(spent[0] * 1000)
    return timings, sql, len(captured)


def _timed(
    spent: list[float], execute: Any, sql: str, params: Any, many: bool, context: Any
) -> Any:
    """Adds the statement's time to ``spent``."""
    started = time.perf_counter()
    try:
        return execute(sql, params, many, context)
    finally:
        spent[0] += time.perf_counter() - started


def _query(link: str) -> list[tuple[str, str]]:
    return parse_qsl(link.lstrip("?"))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
