"""Workflows carried by the engine: use cases as steps, compensation, and their checks."""

import pytest
from django.test import override_settings

from litejobs import workflows
from litejobs.checks import check_workflows
from litejobs.jobs import catalog as registry
from litejobs.models import Job, JobState
from tests.testapp.jobs import loan_flow
from tests.testapp.models import Mark


def labels(prefix):
    return list(
        Mark.objects.filter(label__startswith=prefix).order_by("id").values_list("label", flat=True)
    )


@pytest.mark.django_db(transaction=True)
def test_a_workflow_runs_its_use_cases_in_order_and_hands_on_outputs(clock, run_worker):
    enqueued = loan_flow.enqueue(loan="L1")
    run_worker()
    job = Job.objects.get(pk=enqueued.id)
    assert job.state == JobState.DONE
    hold = job.result["tests.hold-book"]["hold"]
    assert job.result["open"]["hold"] == hold
    assert labels("L1:") == ["L1:hold", "L1:open"]


@pytest.mark.django_db(transaction=True)
def test_a_failed_workflow_is_compensated_by_its_declared_use_cases(clock, run_worker):
    enqueued = loan_flow.enqueue(loan="L2", fail=True)
    run_worker()
    assert Job.objects.get(pk=enqueued.id).state == JobState.DEAD
    hold = Job.objects.get(pk=enqueued.id).steps.get(name="tests.hold-book").output["hold"]
    assert labels("L2:") == ["L2:hold", f"L2:release:{hold}"]


@pytest.mark.django_db
def test_the_checks_report_unrecorded_behaviour_double_mapping_and_missing_compensation(
    monkeypatch,
):
    # The bad declarations register only into copies, dropped after the test.
    monkeypatch.setattr(workflows, "_workflows", workflows._workflows.copy())
    monkeypatch.setattr(workflows, "_use_cases", workflows._use_cases.copy())
    assert check_workflows() == []
    with override_settings(INSTALLED_APPS=["litejobs", "tests.badworkflows"]):
        registry.autodiscover()
        found = {(m.id, m.obj) for m in check_workflows()}
    registry.autodiscover()
    assert ("litejobs.E007", "workflow 'bad.first', step 'bad.unregistered'") in found
    assert ("litejobs.E009", "workflow 'bad.first', step 'no-compensation'") in found
    assert ("litejobs.E008", "bad.known") in found
    assert {m_id for m_id, _ in found} == {"litejobs.E007", "litejobs.E008", "litejobs.E009"}
