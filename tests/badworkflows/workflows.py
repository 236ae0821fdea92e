"""Workflows with every mistake the system checks report."""

from litejobs.workflows import Compensation, Step, use_case, workflow


@use_case("bad.known")
def known(ctx, input, outputs):
    return None


workflow(
    "bad.first",
    key=lambda n: f"bad-first:{n}",
    steps=[
        Step(use_case="bad.known", compensate=Compensation.none(reason="harmless")),
        Step(use_case="bad.unregistered", compensate=Compensation.use_case("bad.undo-missing")),
        Step("no-compensation", use_case="bad.known-elsewhere"),
    ],
)
workflow(
    "bad.second",
    key=lambda n: f"bad-second:{n}",
    steps=[Step(use_case="bad.known", compensate=Compensation.none(reason="harmless"))],
)
