"""``ctx.step``: durable steps. A step's JSON result is stored under (job, name) in the same
transaction as the step's own database writes, only while the run still holds the job's claim
(its fence); a replay — the next attempt, or another worker after a crash — returns the stored
result instead of calling the function again.

``sleep`` and ``wait_for_event`` release the worker: the job becomes ``waiting`` (its attempt
uncounted) and any worker resumes it when the time comes or a matching event is published.
When a job fails for good, the ``compensate`` callbacks of its completed steps run last-in,
first-out, each recorded as a step; never on an ordinary retry or a cancel.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from django.db import connections, transaction

from ..conf import settings
from ..core import clock, otel
from ..core.durations import parse_duration
from ..core.enums import StepKind, StepState
from ..core.payloads import Scrubber, dumps, round_trip
from ..exceptions import (
    InvalidInput,
    StaleFence,
    StepUsageError,
    TransitionRefused,
    WaitTimedOut,
)
from ..sql.cursors import fetch_all, fetch_one, hot_cursor, joining_cursor, run_query
from . import events

if TYPE_CHECKING:
    from .claims import ClaimedJob

logger = logging.getLogger(__name__)

#: ``run_at`` of a job held for an operator (a ``once`` step whose outcome is unknown).
HELD = datetime(9999, 12, 31, tzinfo=UTC)


class Suspended(BaseException):
    """The body asked to wait (sleep or event); the runner hands the job back until ``wake_at``.

    A ``BaseException`` so a body's ``except Exception`` cannot swallow it by accident.
    """

    def __init__(
        self,
        wake_at: datetime,
        *,
        event: str = "",
        since: datetime | None = None,
        match: str | None = None,
    ) -> None:
        super().__init__(wake_at)
        self.wake_at = wake_at
        self.event = event
        self.since = since
        self.match = match


class OperatorNeeded(BaseException):
    """A ``once`` step's outcome is unknown after a crash: the job waits for an operator."""

    def __init__(self, step: str, job_id: int) -> None:
        super().__init__(step)
        self.step = step
        self.message = (
            f"Step {step!r} was started but its outcome was never recorded (the worker stopped "
            "mid-step), and it is marked once=True so it is not run again blindly. Check "
            f"whether it took effect, then run: manage.py litejobs resolve-step {job_id} "
            f"{step} --ran (or --not-ran)."
        )


@dataclass
class StoredStep:
    """A step as the database has it."""

    name: str
    kind: str
    state: str
    output: Any
    executions: int
    wake_at: datetime | None
    created_at: datetime
    sequence: int


class Steps:
    """The ``ctx.step`` of one run."""

    def __init__(
        self, *, job: ClaimedJob, atomic: bool, alias: str, sensitive: tuple[str, ...] = ()
    ) -> None:
        self._job = job
        self._atomic = atomic
        self._alias = alias
        self._sensitive = sensitive
        self._scrubber: Scrubber | None = None
        self._stored: dict[str, StoredStep] | None = None
        self._used: set[str] = set()
        self._compensations: list[tuple[str, Callable[[Any], Any], Any]] = []

    # The public verbs ----------------------------------------------------------------------

    def run(
        self,
        name: str,
        fn: Callable[[], Any],
        *,
        compensate: Callable[[Any], Any] | None = None,
        once: bool = False,
    ) -> Any:
        """Run ``fn`` once ever for this job and answer its (stored) JSON result (in a span of
        its own, with OpenTelemetry)."""
        with otel.step(name):
            return self._run(name, fn, compensate, once)

    def _run(
        self,
        name: str,
        fn: Callable[[], Any],
        compensate: Callable[[Any], Any] | None,
        once: bool,
    ) -> Any:
        self._claim_name(name)
        if once and self._atomic:
            raise StepUsageError(
                f"Step {name!r} is once=True in an atomic job: a crash rolls the marker back "
                "with everything else, so once= cannot work there. Declare the job "
                "atomic=False.",
                code="step-once-atomic",
            )
        stored = self._load().get(name)
        if stored is not None and stored.state == StepState.COMPLETED:
            self._remember(name, compensate, stored.output)
            return stored.output
        if stored is not None and stored.state in (StepState.STARTED, StepState.UNKNOWN) and once:
            self._write(name, StepState.UNKNOWN, executions=stored.executions, once=True)
            raise OperatorNeeded(name, self._job.id)
        executions = (stored.executions if stored else 0) + 1
        if once:
            self._write(name, StepState.STARTED, executions=executions, once=True)
        try:
            with transaction.atomic(using=self._alias):
                output = fn()
                self._write(
                    name,
                    StepState.COMPLETED,
                    output=_output_json(name, output),
                    executions=executions,
                    once=once,
                    finished=True,
                )
        except Exception as error:
            if not self._atomic and not isinstance(error, StaleFence):
                self._write(
                    name,
                    StepState.FAILED,
                    executions=executions,
                    once=once,
                    error=self._scrub(f"{type(error).__name__}: {error}")[:2000],
                )
            raise
        self._remember(name, compensate, output)
        return output

    def sleep(self, name: str, duration: timedelta | str | float) -> None:
        """Pause the job for ``duration`` without holding a worker; resumes on any worker."""
        self._claim_name(name)
        self._refuse_in_atomic(name, "sleep")
        stored = self._load().get(name)
        if stored is not None and stored.state == StepState.COMPLETED:
            return
        now = clock.now()
        if stored is None:
            wake_at = now + parse_duration(duration, name=f"sleep {name!r}")
            self._write(name, StepState.WAITING, kind=StepKind.SLEEP, wake_at=wake_at)
        else:
            wake_at = cast(datetime, stored.wake_at)  # a waiting sleep has its wake-up
        if now >= wake_at:
            self._write(name, StepState.COMPLETED, kind=StepKind.SLEEP, finished=True)
            return
        raise Suspended(wake_at)

    def wait_for_event(
        self,
        name: str,
        event: str,
        *,
        match: dict[str, Any] | None = None,
        timeout: timedelta | str | float,
    ) -> dict[str, Any]:
        """Wait (without a worker) for a published ``event`` whose payload contains ``match``.

        Answers the event's payload; raises ``litejobs.WaitTimedOut`` after ``timeout``.
        """
        self._claim_name(name)
        self._refuse_in_atomic(name, "wait_for_event")
        try:
            events.declared(event)
        except InvalidInput as error:  # a typo never heals: stop instead of retrying
            raise StepUsageError(error.args[0], code=error.code) from None
        match = {} if match is None else match
        if not isinstance(match, dict):
            raise StepUsageError(
                f"Step {name!r}: match= must be a dict the event payload contains.",
                code="step-match-invalid",
            )
        match_json = _output_json(name, match)
        stored = self._load().get(name)
        if stored is not None and stored.state == StepState.COMPLETED:
            arrived: dict[str, Any] = stored.output
            return arrived
        if stored is not None and stored.state == StepState.TIMED_OUT:
            raise WaitTimedOut(f"no {event!r} event matching {match} arrived in time")
        now = clock.now()
        if stored is None:
            since, deadline = now, now + parse_duration(timeout, name=f"timeout of {name!r}")
            self._write(
                name,
                StepState.WAITING,
                kind=StepKind.WAIT,
                wake_at=deadline,
                event=event,
                match=match_json,
            )
            raise Suspended(deadline, event=event, since=since, match=match_json)
        since, deadline = stored.created_at, cast(datetime, stored.wake_at)  # a waiting wait's
        with hot_cursor(connections[self._alias]) as cursor:
            run_query(cursor, "event_find", {"name": event, "since": since, "match": match_json})
            found = fetch_one(cursor)
        if found is not None:
            stored_payload = found["payload"]
            payload: dict[str, Any] = (
                json.loads(stored_payload) if isinstance(stored_payload, str) else stored_payload
            )
            self._write(
                name,
                StepState.COMPLETED,
                kind=StepKind.WAIT,
                output=dumps(payload),
                finished=True,
                event=event,
                match=match_json,
            )
            return payload
        if now >= deadline:
            self._write(name, StepState.TIMED_OUT, kind=StepKind.WAIT, event=event, finished=True)
            raise WaitTimedOut(f"no {event!r} event matching {match} arrived in time")
        raise Suspended(deadline, event=event, since=since, match=match_json)

    # For the runner ------------------------------------------------------------------------

    @property
    def has_compensations(self) -> bool:
        return bool(self._compensations)

    def compensate(self) -> list[str]:
        """Run the compensations of completed steps, last first; answers the failures."""
        failures = []
        for name, fn, output in reversed(self._compensations):
            step = f"compensate:{name}"
            stored = self._load().get(step)
            if stored is not None and stored.state == StepState.COMPLETED:
                continue
            executions = (stored.executions if stored else 0) + 1
            try:
                with transaction.atomic(using=self._alias):
                    result = fn(output)
                    self._write(
                        step,
                        StepState.COMPLETED,
                        kind=StepKind.COMPENSATE,
                        output=_output_json(step, result),
                        executions=executions,
                        finished=True,
                    )
            except Exception as error:
                failure = self._scrub(f"{type(error).__name__}: {error}")
                logger.error(
                    "compensation failed job=%s step=%s error=%s", self._job.id, name, failure
                )
                failures.append(f"{step}: {failure}")
                if not self._atomic:
                    self._write(
                        step,
                        StepState.FAILED,
                        kind=StepKind.COMPENSATE,
                        executions=executions,
                        error=failure[:2000],
                    )
        return failures

    def _scrub(self, text: str) -> str:
        """An error text of this run without the job's sensitive values."""
        if self._scrubber is None:
            self._scrubber = Scrubber(self._job.payload, self._sensitive)
        return self._scrubber(text)

    # Storage -------------------------------------------------------------------------------

    def _claim_name(self, name: str) -> None:
        if (
            not isinstance(name, str)
            or not name
            or len(name) > 200
            or name.startswith("compensate:")
        ):
            raise StepUsageError(
                f"Step names are 1-200 characters and may not start with 'compensate:'; got "
                f"{name!r}.",
                code="step-name-invalid",
            )
        if name in self._used:
            raise StepUsageError(
                f"Step name {name!r} is used twice in one run of job {self._job.name!r}; every "
                "step needs its own name (its result is stored under it).",
                code="step-duplicate",
            )
        self._used.add(name)

    def _refuse_in_atomic(self, name: str, verb: str) -> None:
        if self._atomic:
            raise StepUsageError(
                f"Step {name!r}: {verb} releases the worker, so the job's writes so far must "
                "commit as they go. Declare the job atomic=False.",
                code="step-suspend-atomic",
            )

    def _remember(self, name: str, compensate: Callable[[Any], Any] | None, output: Any) -> None:
        if compensate is not None:
            self._compensations.append((name, compensate, output))

    def _load(self) -> dict[str, StoredStep]:
        if self._stored is None:
            with hot_cursor(connections[self._alias]) as cursor:
                run_query(cursor, "steps_of_job", {"job_id": self._job.id})
                found = fetch_all(cursor)
            self._stored = {}
            for step in found:
                if isinstance(step["output"], str):
                    step["output"] = json.loads(step["output"])
                self._stored[step["name"]] = StoredStep(**step)
        return self._stored

    def _write(
        self,
        name: str,
        state: str,
        *,
        kind: str = StepKind.RUN,
        output: str | None = None,
        executions: int = 0,
        once: bool = False,
        error: str = "",
        finished: bool = False,
        wake_at: datetime | None = None,
        event: str = "",
        match: str | None = None,
    ) -> None:
        """Record a step, fenced on the claim (``StaleFence`` when another claim holds the job)."""
        stored = self._load()
        now = clock.now()
        sequence = max((s.sequence for s in stored.values()), default=0) + 1
        # A step whose function sent nothing is recorded in one autocommit statement.
        with joining_cursor(connections[self._alias]) as cursor:
            run_query(
                cursor,
                "step_write",
                {
                    "job_id": self._job.id,
                    "fence": self._job.fence,
                    "name": name,
                    "kind": kind,
                    "state": state,
                    "output": output,
                    "error": error,
                    "executions": executions,
                    "once": once,
                    "now": now,
                    "finished_at": now if finished else None,
                    "wake_at": wake_at,
                    "event": event,
                    "match": match,
                    "sequence": sequence if state == StepState.COMPLETED else 0,
                },
            )
            written = fetch_one(cursor)
        if written is None:
            raise StaleFence(
                f"step {name!r} of job {self._job.id} not recorded: the run no longer holds "
                "the job's claim; its writes are rolled back"
            )
        previous = stored.get(name)
        stored[name] = StoredStep(
            name=name,
            kind=kind,
            state=state,
            output=json.loads(output) if output is not None else None,
            executions=executions,
            wake_at=wake_at if wake_at is not None else (previous.wake_at if previous else None),
            created_at=written["created_at"],
            sequence=sequence if state == StepState.COMPLETED else 0,
        )


def _output_json(name: str, value: Any) -> str:
    text = round_trip(value)
    if text is None:
        raise StepUsageError(
            f"Step {name!r} returned a {type(value).__name__}, which does not round-trip "
            "through JSON; return plain JSON values (ids, strings, numbers, lists, dicts).",
            code="step-output-not-json",
        )
    return text


def resolve_step(job_id: int, step: str, *, ran: bool, by: str, reason: str = "") -> None:
    """An operator's verdict on a ``once`` step whose outcome was unknown after a crash.

    ``ran=True`` records it completed (its function is not called again); ``ran=False``
    records it failed, so the resumed job runs it again. The job is due at once. A
    ``reason`` is kept in the step's note beside who resolved it.
    """
    if not isinstance(by, str) or not by.strip():
        raise InvalidInput("Say who resolves the step (by=).", code="by-missing")
    verdict = "ran" if ran else "did not run"
    why = f" ({reason.strip()[:500]})" if reason and reason.strip() else ""
    with hot_cursor(connections[_alias()]) as cursor:
        run_query(
            cursor,
            "step_resolve",
            {
                "job_id": job_id,
                "name": step,
                "ran": ran,
                "now": clock.now(),
                "note": f"Resolved by {by.strip()[:150]}: it {verdict}{why}.",
            },
        )
        resolved = fetch_one(cursor)
    if resolved is None:
        raise TransitionRefused(
            f"Job {job_id} has no step {step!r} awaiting an operator (its outcome is not "
            "unknown, or the job does not exist); see `manage.py litejobs show "
            f"{job_id}`.",
            code="resolve-refused",
        )
    logger.info(
        "step resolved job=%s step=%s ran=%s by=%s reason=%r", job_id, step, ran, by, reason
    )


def _alias() -> str:
    return settings.DATABASE
