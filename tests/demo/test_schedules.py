"""The demo's schedules: installed beside litejobs' own, passing the checks; and its manual job,
which only the demo's operators may run by hand."""

import json
from io import StringIO

import pytest
from django.core import checks
from django.core.management import call_command

from litejobs.models import Job
from litejobs.scheduling import declarations


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
