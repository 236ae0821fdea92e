"""The demo's schedules: installed beside litejobs' own, passing the checks; its manual job,
which only the demo's operators may run by hand; and the day's lock its reconciliation holds."""

import json
from io import StringIO

import pytest
from django.core import checks
from django.core.management import call_command

import litejobs
from litejobs.models import Job, JobState
from litejobs.scheduling import declarations
from project.orders.jobs import reconcile_orders


def test_the_installed_schedules_pass_the_checks():
    assert not [m for m in checks.run_checks(tags=["litejobs"]) if m.level >= checks.ERROR]
    names = {d.name for d in declarations.all_schedules()}
    assert {"litejobs.housekeeping", "orders.nightly-reconcile", "orders.statement-9am"} <= names


@pytest.mark.django_db
def test_only_the_demo_operators_reconcile_a_day_by_hand(clock):
    out, err = StringIO(), StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command(
            "litejobs",
            *("run-manual", "orders.reconcile-day", "--reason", "repair", "--by", "eve"),
            stdout=out,
            stderr=err,
        )
    assert exited.value.code == 1
    assert "[manual-refused]" in err.getvalue() and "admin, ops" in err.getvalue()
    call_command(
        "litejobs",
        *("run-manual", "orders.reconcile-day", "--reason", "data repair", "--by", "ops"),
        *("--args", '{"day": "2026-02-28"}', "--json"),
        stdout=out,
    )
    assert Job.objects.get(pk=json.loads(out.getvalue())["job_id"]).key == "reconcile:2026-02-28"


@pytest.mark.django_db(transaction=True)
def test_a_day_is_never_reconciled_by_two_runs_at_once(run_worker):
    with litejobs.lock("orders.reconcile:2026-02-27", ttl="10s", wait=0) as other_run:
        blocked = reconcile_orders.enqueue(day="2026-02-27")
        run_worker(queues=["default"])
    job = Job.objects.get(pk=blocked.id)
    assert job.state == JobState.FAILED and "lock-wait-timeout" in job.error_message

    free = reconcile_orders.enqueue(day="2026-02-26")
    run_worker(queues=["default"])
    result = Job.objects.get(pk=free.id).result
    assert result["day"] == "2026-02-26" and result["lock_token"] > other_run.token
