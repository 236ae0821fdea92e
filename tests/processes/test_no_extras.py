"""A project with litejobs alone (no channels, daphne, django-otp, prometheus-client or
opentelemetry) checks, migrates, runs jobs, plans a schedule, publishes the outbox and serves
the admin."""

import json
import subprocess
import sys

import pytest
from django.db import connection

from litejobs.models import Job, JobState, Occurrence
from tests import database
from tests.conftest import ROOT

MANAGE = ROOT / "tests" / "no_extras" / "manage.py"

#: Run in the project's shell: what needs proving with the extras unimportable.
SCRIPT = """
import json, sys
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

missing = []
for name in ("channels", "daphne", "django_otp", "prometheus_client", "opentelemetry"):
    try:
        __import__(name)
    except ImportError:
        missing.append(name)
from litejobs.outbox import stage
from litejobs.scheduling.scheduler import Scheduler
from tests.no_extras.jobs import plain

enqueued = plain.enqueue(label="one").id
stage("noextras.happened", {"what": "it"})
planned = Scheduler(install_signals=False, only=["noextras.tick"]).step().planned
user = get_user_model().objects.create_superuser("admin", "admin@example.com", "pw")
client = Client()
client.force_login(user)
dashboard = client.get(reverse("admin:app_list", args=["litejobs"])).content.decode()
# The dashboard without channels: the periodic refresh alone, no websocket named.
dashboard_refresh = "data-live" not in dashboard and "reloads every 5 seconds" in dashboard
pages = {
    url: client.get(url).status_code
    for url in (
        reverse("admin:index"),
        reverse("admin:litejobs_job_changelist"),
        reverse("admin:litejobs_workitem_changelist"),
        reverse("admin:litejobs_schedule_changelist"),
    )
}

# Work queues work without channels: their page says it has no live updates.
from decimal import Decimal
from django.core.exceptions import ImproperlyConfigured
from litejobs.bulk import bulk_money_action
from litejobs.bulk.checks import check_bulk_actions
from litejobs.workqueues import work_queue

work_queue("noextras.users", model="auth.User", claim="optional", permission="auth.view_user")
queue_page = client.get(reverse("admin:litejobs_workitem_queue", args=["noextras.users"]))
pages["queue"] = queue_page.status_code
live_note = "no live updates" in queue_page.content.decode()
# A bulk money action declared without django-otp, and the metrics view without prometheus:
bulk_money_action(
    "noextras.pay", queue="noextras.users", permission="auth.change_user",
    amount=lambda row: (Decimal(1), "EUR"), execute=lambda row, run: None,
    bind=False, reason="pays each user a fixed bonus to their own account",
)
otp = [(e.id, e.msg) for e in check_bulk_actions()]
try:
    import litejobs.views
    metrics = "imported"
except ImproperlyConfigured as error:
    metrics = str(error)
print(json.dumps({
    "missing": missing, "job": enqueued, "planned": planned, "pages": pages,
    "live_note": live_note, "dashboard_refresh": dashboard_refresh, "otp": otp, "metrics": metrics,
    "loaded": [
        n for n in ("channels", "django_otp", "prometheus_client", "opentelemetry")
        if n in sys.modules
    ],
}))
"""


def manage(*args: str) -> subprocess.CompletedProcess:
    env = {
        "PATH": "/usr/bin:/bin",
        "DATABASE_URL": database.url_from_settings(connection.settings_dict),
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, str(MANAGE), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_project_without_the_extras_runs_jobs_schedules_the_outbox_and_the_admin():
    assert "System check identified no issues" in manage("check").stdout
    manage("migrate", "--noinput")
    report = json.loads(manage("shell", "-c", SCRIPT).stdout.strip().splitlines()[-1])
    assert report["missing"] == [
        "channels",
        "daphne",
        "django_otp",
        "prometheus_client",
        "opentelemetry",
    ]
    assert report["loaded"] == []
    assert report["planned"] >= 1
    assert set(report["pages"].values()) == {200}
    assert report["live_note"]  # the queue page works and says it has no live updates
    assert report["dashboard_refresh"]  # the dashboard reloads itself, names no websocket
    [(check_id, message)] = report["otp"]
    assert check_id == "litejobs.E050" and "[extra-missing]" in message
    assert 'pip install "litejobs[otp]"' in message
    assert report["metrics"].startswith("[extra-missing]")
    assert 'pip install "litejobs[metrics]"' in report["metrics"]
    manage("runrelay", "--once")
    manage("runworker", "--once", "--no-relay")
    assert Job.objects.get(pk=report["job"]).result == {"ran": "one"}
    [heard] = Job.objects.filter(name="no_extras.heard")
    assert (heard.state, heard.result) == (JobState.DONE, {"heard": "it"})
    assert Occurrence.objects.filter(schedule__name="noextras.tick").exists()
