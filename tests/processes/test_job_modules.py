"""A job declared outside ``jobs.py`` (an app's ``services.py``) runs in a worker whose startup
never imported its module: the worker imports the module the job's row records, and only when
it lies inside an installed app."""

import pytest

from litejobs.models import Job, JobState
from tests.factories import ReleasedJobFactory
from tests.testapp.models import Mark
from tests.testapp.services import from_services

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.slow
def test_a_job_declared_in_an_apps_services_module_runs_in_a_fresh_worker(processes):
    enqueued = from_services.enqueue(label="from-services")
    assert Job.objects.get(pk=enqueued.id).module == "tests.testapp.services"
    # Only a module inside an installed app is imported: this row's is not, so it waits.
    outside = ReleasedJobFactory(name="elsewhere.job", module="json.tool", payload={})
    worker = processes.worker("--once", "--concurrency", "1")
    assert worker.wait(60) == 0
    assert Job.objects.get(pk=enqueued.id).state == JobState.DONE
    assert Mark.objects.filter(label="from-services").count() == 1
    log = processes.log(worker)
    assert "handed back" in log and "json.tool" in log and "lies in no installed app" in log
    assert Job.objects.get(pk=outside.pk).handed_back_at is not None
