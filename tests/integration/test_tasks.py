"""Django Tasks (`@task`) enqueued through litejobs.tasks.LitejobsBackend."""

import pytest
from django.db import transaction

from litejobs.models import Job
from litejobs.tasks.backend import TaskResultDoesNotExist, TaskResultStatus
from tests.testapp.tasks import add, explode, which_attempt

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_task_enqueued_through_the_backend_runs_and_its_result_is_readable(run_worker):
    result = add.enqueue(2, 3)
    assert result.status == TaskResultStatus.READY
    run_worker()
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 5
    again = add.get_result(result.id)
    assert (again.return_value, again.args, again.attempts) == (5, [2, 3], 1)


def test_a_task_taking_context_sees_its_attempt(run_worker):
    result = which_attempt.enqueue(label="x")
    run_worker()
    result.refresh()
    assert result.return_value == 1


def test_a_failing_task_reports_its_error(run_worker):
    result = explode.enqueue("boom")
    run_worker()
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    [error] = result.errors
    assert error.exception_class is ValueError
    assert "boom" in error.traceback


def test_a_task_enqueued_in_a_rolled_back_transaction_never_exists():
    with pytest.raises(RuntimeError), transaction.atomic():
        add.enqueue(1, 1)
        raise RuntimeError
    assert not Job.objects.exists()


def test_an_unknown_result_id_is_reported_as_missing():
    with pytest.raises(TaskResultDoesNotExist):
        add.get_result("999999")
