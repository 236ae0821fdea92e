"""Workflow declarations that cannot run are refused at declaration."""

import pytest

from litejobs.exceptions import DeclarationError
from litejobs.workflows import Compensation, Step, workflow


def test_bad_workflow_declarations_are_refused():
    with pytest.raises(DeclarationError) as caught:
        workflow("x.y", carried_by="handler", key=lambda n: "k", steps=[Step(use_case="a.b")])
    assert caught.value.code == "workflow-invalid"
    with pytest.raises(DeclarationError) as caught:
        Compensation.none(reason="")
    assert caught.value.code == "compensation-reason-missing"
    with pytest.raises(DeclarationError):
        workflow("x.z", key=lambda n: "k", steps=[Step(use_case="a.b"), Step(use_case="a.b")])
