"""Schedule declarations with the database: ``manage.py check`` reports the modules that hold a
bad one, and a manual job runs only where and for whom its guard allows."""

import pytest
from django.test import override_settings

from litejobs import manual
from litejobs.checks import check_declarations
from litejobs.exceptions import GuardRefused, InvalidInput
from litejobs.jobs import catalog as registry
from litejobs.models import Job
from litejobs.scheduling import manual as manual_jobs
from tests.testapp.jobs import scheduled_mark


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("app", "check_id", "code", "says"),
    [
        ("tests.badschedules", "litejobs.E005", "schedule-invalid", "invalid cron expression"),
        ("tests.badmanual", "litejobs.E006", "job-guard-missing", "has no guard"),
    ],
)
def test_a_module_with_a_bad_declaration_is_reported_by_manage_py_check(app, check_id, code, says):
    with override_settings(INSTALLED_APPS=["litejobs", app]):
        registry.autodiscover()
        [error] = check_declarations()
    registry.autodiscover()  # back to the real apps
    assert error.id == check_id
    assert f"{app}.schedules" in error.msg and f"[{code}]" in error.msg and says in error.msg
    assert check_declarations() == []


@pytest.mark.django_db
def test_a_manual_job_runs_only_where_and_for_whom_its_guard_allows(clock):
    manual(
        "t.manual",
        job=scheduled_mark,
        runs_where=("production",),
        guard=lambda actor, now: actor == "alice" or "only alice",
    )
    with pytest.raises(GuardRefused, match="runs only in production"):
        manual_jobs.run("t.manual", by="alice", reason="repair")
    with override_settings(LITEJOBS={"DEPLOYMENT": "production"}):
        with pytest.raises(GuardRefused, match="only alice") as error:
            manual_jobs.run("t.manual", by="bob", reason="repair")
        assert error.value.code == "manual-refused"
        with pytest.raises(InvalidInput, match="give a reason"):
            manual_jobs.run("t.manual", by="alice", reason="")
        assert not Job.objects.exists()
        enqueued = manual_jobs.run(
            "t.manual", by="alice", reason="repair", arguments={"label": "m"}
        )
    assert Job.objects.get(pk=enqueued.id).key == "scheduled:m"
