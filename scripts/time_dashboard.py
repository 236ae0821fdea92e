"""Time the admin index (the litejobs dashboard) as a superuser sees it: the median of five
renders after one to warm up, in ms. Load rows first (scripts/load_dashboard_rows.sql).

    DATABASE_URL=postgres://…/scratch python scripts/time_dashboard.py [--fold]

``--fold`` first folds the per-minute counters past the last hour into hourly rows, as the
built-in ``litejobs.minutes_rollup`` schedule does.
"""

import os
import statistics
import sys
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import reverse  # noqa: E402

from litejobs.core import clock  # noqa: E402
from litejobs.jobs import minutes  # noqa: E402
from litejobs.models import JobMinute  # noqa: E402

RENDERS = 5


def render(client: Client, url: str) -> None:
    response = client.get(url)
    if response.status_code != 200:
        raise SystemExit(f"the dashboard answered {response.status_code}")


def main() -> None:
    if "--fold" in sys.argv:
        started = time.perf_counter()
        folded = minutes.fold_minutes(clock.now())
        print(f"folded {folded} rows in {(time.perf_counter() - started) * 1000:.0f} ms")
    user, _ = get_user_model().objects.get_or_create(
        username="dashboard-timer", defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client()
    client.force_login(user)
    url = reverse("admin:app_list", kwargs={"app_label": "litejobs"})
    render(client, url)
    times = []
    for _ in range(RENDERS):
        started = time.perf_counter()
        render(client, url)
        times.append((time.perf_counter() - started) * 1000)
    rows = JobMinute.objects.count()
    shown = " ".join(f"{t:.0f}" for t in times)
    print(f"counter rows {rows}; renders ms {shown}; median {statistics.median(times):.0f}")


if __name__ == "__main__":
    main()
