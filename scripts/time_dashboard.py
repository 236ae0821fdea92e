"""Time the admin index (the litejobs dashboard) as a superuser sees it: the median of five
renders after one to warm up, in ms, and of the SQL time of its two charts' reads of the
per-minute counters. Load rows first (scripts/load_dashboard_rows.sql).

    DATABASE_URL=postgres://…/scratch python scripts/time_dashboard.py [--fold]

``--fold`` first folds the per-minute counters past the last hour into hourly rows, as the
built-in ``litejobs.minutes_rollup`` schedule does, then compacts the counters' table as it
stays when folded from the start (each fold every ten minutes deletes ten minutes' rows, whose
space the next minutes' rows reuse), not as a first fold of two days' rows leaves it.
"""

import os
import statistics
import sys
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.urls import reverse  # noqa: E402

from litejobs.core import clock  # noqa: E402
from litejobs.jobs import minutes  # noqa: E402
from litejobs.models import JobMinute  # noqa: E402

RENDERS = 5
#: How the charts' statement (``minute_counts``) begins.
CHARTS_SQL = "-- Jobs settled per period"


def render(client: Client, url: str) -> None:
    response = client.get(url)
    if response.status_code != 200:
        raise SystemExit(f"the dashboard answered {response.status_code}")


def main() -> None:
    if "--fold" in sys.argv:
        started = time.perf_counter()
        folded = minutes.fold_minutes(clock.now())
        print(f"folded {folded} rows in {(time.perf_counter() - started) * 1000:.0f} ms")
        with connection.cursor() as cursor:
            cursor.execute("VACUUM FULL ANALYZE litejobs_jobminute")
    user, _ = get_user_model().objects.get_or_create(
        username="dashboard-timer", defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client()
    client.force_login(user)
    url = reverse("admin:app_list", kwargs={"app_label": "litejobs"})
    render(client, url)
    times, charts = [], []
    for _ in range(RENDERS):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            render(client, url)
            times.append((time.perf_counter() - started) * 1000)
        charts.append(
            sum(float(q["time"]) for q in queries if q["sql"].startswith(CHARTS_SQL)) * 1000
        )
    rows = JobMinute.objects.count()
    shown = " ".join(f"{t:.0f}" for t in times)
    print(
        f"counter rows {rows}; renders ms {shown}; median {statistics.median(times):.0f}; "
        f"charts' SQL median {statistics.median(charts):.0f} ms"
    )


if __name__ == "__main__":
    main()
