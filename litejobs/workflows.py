"""Workflows carried by the engine: sagas whose every step maps to one registered use case.

```python
@use_case("lending.place-hold")
def place_hold(ctx, input, outputs):          # -> JSON; outputs: earlier steps' results
    return {"hold": Hold.objects.create(book_id=input["book_id"]).pk}

@use_case("lending.release-hold")
def release_hold(ctx, input, output):         # undoes place-hold, given its output
    Hold.objects.filter(pk=output["hold"]).delete()

loan = workflow(
    "lending.open-loan", carried_by="workflow",
    key=lambda loan_id, book_id: f"loan:{loan_id}",
    steps=[
        Step(use_case="lending.place-hold",
             compensate=Compensation.use_case("lending.release-hold")),
        Step("notify", use_case="lending.notify-member",
             compensate=Compensation.none(reason="a sent notice cannot be unsent")),
    ],
    retry=Retry(attempts=5), timeout="5m",
)
loan.enqueue(loan_id=7, book_id=3)
```

Each step runs as a durable step (``ctx.step.run``): completed steps replay from storage, and
when the workflow fails for good the declared compensations run last-in first-out. Retry
counts and timeouts stay in code, on the workflow. System checks report a step whose use case
is not registered (``behavior-unrecorded``), a use case two steps map, and a step without a
compensation declaration.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .core.diagnostics import Problem
from .core.registry import Registry
from .exceptions import DeclarationError, StepUsageError
from .jobs.context import JobContext
from .jobs.declarations import JobDefinition

_NAME = re.compile(r"^[a-z0-9][a-z0-9_.:-]{0,199}$")


def _defined_at(func: Callable[..., Any]) -> tuple[str, str]:
    """Where a function is defined: the same for each import of its module."""
    return func.__module__, func.__qualname__


def _registered_twice(
    name: str, existing: Callable[..., Any], func: Callable[..., Any]
) -> DeclarationError:
    return DeclarationError(
        f"Use case {name!r} is registered twice ({existing.__module__}."
        f"{existing.__qualname__} and {func.__module__}.{func.__qualname__}).",
        code="use-case-duplicate",
    )


def _unrecorded(name: str) -> StepUsageError:
    """A step naming a use case nobody registered: a permanent error (it never heals)."""
    return StepUsageError(
        f"No use case is registered as {name!r} (behavior-unrecorded): decorate its "
        f"function with @use_case({name!r}).",
        code="behavior-unrecorded",
    )


#: A module imported again (after a failed first import) registers the same function again.
_use_cases: Registry[Callable[..., Any]] = Registry(
    "use case", origin=_defined_at, duplicate=_registered_twice, missing=_unrecorded
)
_workflows: Registry[Workflow] = Registry("workflow", origin=None)


def use_case(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a function as the use case ``name`` (a step of some workflow maps to it)."""
    _check_name(name, "use case")

    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        return _use_cases.register(name, func)

    return register


@dataclass(frozen=True)
class Compensation:
    """How a step is undone: by a registered use case, or not at all (with the reason why)."""

    use_case_name: str | None = None
    reason: str = ""

    @classmethod
    def use_case(cls, name: str) -> Compensation:
        """Undo the step with the registered use case ``name`` (given the step's output)."""
        _check_name(name, "compensation use case")
        return cls(use_case_name=name)

    @classmethod
    def none(cls, *, reason: str) -> Compensation:
        """The step is not undone; ``reason`` says why (a reviewer reads it)."""
        if not isinstance(reason, str) or not reason.strip():
            raise DeclarationError(
                "Compensation.none() needs reason='why this step is never undone'.",
                code="compensation-reason-missing",
            )
        return cls(reason=reason.strip())


@dataclass(frozen=True)
class _StepValues:
    """A step as ``Step`` checked it: ``name`` is given or its use case's."""

    name: str
    use_case: str
    compensate: Compensation | None


class Step(_StepValues):
    """One step of a workflow: the use case it runs, and how it is compensated (named after
    its use case unless ``name`` is given)."""

    def __init__(
        self, name: str | None = None, use_case: str = "", compensate: Compensation | None = None
    ) -> None:
        _check_name(use_case, "use case of a step")
        named = use_case if name is None else name
        if compensate is not None and not isinstance(compensate, Compensation):
            raise DeclarationError(
                f"Step {named!r}: compensate= takes Compensation.use_case(...) or "
                "Compensation.none(reason=...).",
                code="compensation-invalid",
            )
        super().__init__(named, use_case, compensate)


class Workflow(JobDefinition):
    """A saga declared with ``workflow(...)``: a job whose body runs its steps in order."""

    def __init__(
        self, name: str, *, steps: list[Step], key: Callable[..., str] | None, **options: Any
    ) -> None:
        if not steps or not all(isinstance(s, Step) for s in steps):
            raise DeclarationError(
                f"Workflow {name!r} needs steps=[Step(...), ...].", code="workflow-invalid"
            )
        names = [s.name for s in steps]
        if len(set(names)) != len(names):
            raise DeclarationError(
                f"Workflow {name!r} names a step twice ({names}); step names must be unique.",
                code="workflow-invalid",
            )
        self.steps = tuple(steps)
        super().__init__(self._body, key=key, name=name, atomic=False, **options)

    def _body(self, ctx: JobContext, **input: Any) -> dict[str, Any]:
        outputs: dict[str, Any] = {}
        for step in self.steps:
            perform = registered(step.use_case)
            undo = None
            if step.compensate is not None and step.compensate.use_case_name:
                undo = _compensation(registered(step.compensate.use_case_name), ctx, input)
            outputs[step.name] = ctx.step.run(
                step.name, _bind(perform, ctx, input, dict(outputs)), compensate=undo
            )
        return outputs


def _bind(
    perform: Callable[..., Any],
    ctx: JobContext,
    input: dict[str, Any],
    outputs: dict[str, Any],
) -> Callable[[], Any]:
    return lambda: perform(ctx, input, outputs)


def _compensation(
    undo: Callable[..., Any], ctx: JobContext, input: dict[str, Any]
) -> Callable[[Any], Any]:
    return lambda output: undo(ctx, input, output)


def workflow(
    name: str,
    *,
    carried_by: str = "workflow",
    steps: list[Step],
    key: Callable[..., str] | None,
    **options: Any,
) -> Workflow:
    """Declare a workflow (a saga) carried by the engine; options are those of ``@job``."""
    if carried_by != "workflow":
        raise DeclarationError(
            f"Workflow {name!r}: carried_by={carried_by!r}; litejobs carries workflows itself "
            "(carried_by='workflow'). Write other sagas as a @job with ctx.step.",
            code="workflow-invalid",
        )
    _check_name(name, "workflow")
    return _workflows.register(name, Workflow(name, steps=steps, key=key, **options))


def registered(name: str) -> Callable[..., Any]:
    """The use case registered as ``name``; a step naming another is a permanent error."""
    return _use_cases[name]


def all_workflows() -> list[Workflow]:
    """Every declared workflow, by name."""
    return _workflows.all()


def problems() -> list[Problem]:
    """What the system checks report: a step or compensation whose use case nobody registers
    (``behavior-unrecorded``), a step without a compensation declaration
    (``compensation-missing``), a use case two steps map (``use-case-mapped-twice``)."""
    found = []
    mapped: dict[str, list[str]] = {}
    for flow in all_workflows():
        for step in flow.steps:
            where = f"workflow {flow.name!r}, step {step.name!r}"
            mapped.setdefault(step.use_case, []).append(where)
            if step.use_case not in _use_cases:
                found.append(
                    Problem(
                        "behavior-unrecorded",
                        f"{where} maps to use case {step.use_case!r}, which no @use_case registers "
                        "(behavior-unrecorded).",
                        where=where,
                    )
                )
            if step.compensate is None:
                found.append(
                    Problem(
                        "compensation-missing",
                        f"{where} declares no compensation: add compensate=Compensation.use_case"
                        "('...') or Compensation.none(reason='...').",
                        where=where,
                    )
                )
            elif step.compensate.use_case_name and step.compensate.use_case_name not in _use_cases:
                found.append(
                    Problem(
                        "behavior-unrecorded",
                        f"{where} is compensated by use case {step.compensate.use_case_name!r}, "
                        "which no @use_case registers (behavior-unrecorded).",
                        where=where,
                    )
                )
    for case, places in sorted(mapped.items()):
        if len(places) > 1:
            found.append(
                Problem(
                    "use-case-mapped-twice",
                    f"Use case {case!r} is mapped by {len(places)} steps ({'; '.join(places)}); "
                    "each use case belongs to exactly one step.",
                    where=case,
                )
            )
    return found


def _check_name(name: str, what: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise DeclarationError(
            f"The {what} name {name!r} must be 1-200 lowercase letters, digits or '_.:-', "
            "e.g. 'lending.place-hold'.",
            code="workflow-invalid",
        )
