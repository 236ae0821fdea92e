"""Django Tasks on litejobs: ``TASKS = {"default": {"BACKEND": "litejobs.tasks.LitejobsBackend"}}``.

A plain ``@task`` function (``django.tasks``; the ``django_tasks`` backport on Django 5.2) is
enqueued as a litejobs job named ``task:<module path>``, run by ``runworker`` like any job, and
its result read back through the standard ``get_result`` API. Tasks carry no idempotency key of
their own, so each enqueue is a new job; use ``@job`` when a key, retries or a timeout matter.
"""

from __future__ import annotations

import functools
import inspect
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from django.utils.module_loading import import_string

from ..conf import settings
from ..core import clock
from ..core.payloads import encode_payload
from ..core.retry import Retry
from ..core.tracing import current_traceparent
from ..exceptions import InvalidInput
from ..jobs import catalog, queues
from ..jobs.enqueue import PreparedRow, insert_one
from ..models import Job, JobState

if TYPE_CHECKING:  # the checker reads Django 6's types (django-stubs) on Django 5.2 too
    from django.tasks import Task
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import TaskContext, TaskError, TaskResult, TaskResultStatus
    from django.tasks.exceptions import TaskResultDoesNotExist
else:
    try:  # Django 6.x
        from django.tasks.backends.base import BaseTaskBackend
        from django.tasks.base import TaskContext, TaskError, TaskResult, TaskResultStatus
        from django.tasks.exceptions import TaskResultDoesNotExist
    except ImportError:  # Django 5.2 with the django-tasks backport
        from django_tasks.backends.base import BaseTaskBackend
        from django_tasks.base import TaskContext, TaskError, TaskResult, TaskResultStatus
        from django_tasks.exceptions import TaskResultDoesNotExist

_P = ParamSpec("_P")
_R = TypeVar("_R")

#: Stored rows of Django ``@task`` functions are named ``task:<module path>``.
TASK_PREFIX = "task:"

_STATUS: dict[str, TaskResultStatus] = {
    JobState.SCHEDULED: TaskResultStatus.READY,
    JobState.READY: TaskResultStatus.READY,
    JobState.FAILED: TaskResultStatus.READY,
    JobState.WAITING: TaskResultStatus.READY,
    JobState.RUNNING: TaskResultStatus.RUNNING,
    JobState.DONE: TaskResultStatus.SUCCESSFUL,
    JobState.DEAD: TaskResultStatus.FAILED,
    JobState.CANCELLED: TaskResultStatus.FAILED,
}


@dataclass
class TaskJobDefinition:
    """What the worker needs to run a Django Task stored as a litejobs job."""

    name: str
    queue: str = "default"
    retry: Retry = field(default_factory=lambda: Retry(attempts=1))
    atomic: bool = True
    sensitive: tuple[str, ...] = ()
    dead_letter: bool = True
    concurrency: None = None
    concurrency_limit: None = None
    version: int = 1  # a task's arguments are positional and keyword lists, never upgraded

    @property
    def module_path(self) -> str:
        return self.name.removeprefix(TASK_PREFIX)

    @property
    def module(self) -> str:
        return self.module_path.rpartition(".")[0]

    @property
    def max_attempts(self) -> int:
        return self.retry.attempts

    @property
    def timeout(self) -> timedelta:
        return settings.duration("DEFAULT_TIMEOUT")

    def traceparent(self) -> str:
        return current_traceparent()

    def invoke(self, ctx: Any, payload: Mapping[str, Any], version: int | None = None) -> Any:
        task = import_string(self.module_path)
        args, kwargs = payload.get("args", []), payload.get("kwargs", {})
        if task.takes_context:
            result: TaskResult[..., Any] = TaskResult(
                task=task,
                id=str(ctx.job_id),
                status=TaskResultStatus.RUNNING,
                enqueued_at=None,
                started_at=clock.now(),
                finished_at=None,
                last_attempted_at=clock.now(),
                args=args,
                kwargs=kwargs,
                backend=task.backend,
                errors=[],
                worker_ids=["litejobs"] * ctx.attempt,
            )
            return task.call(TaskContext(task_result=result), *args, **kwargs)
        return task.call(*args, **kwargs)


def definition_for_task(name: str) -> TaskJobDefinition:
    """The runnable definition of a stored ``task:<module path>`` row."""
    return TaskJobDefinition(name=name)


#: The paths ``TASKS`` names this backend by (and by which its queues are found).
BACKEND_PATHS = (
    "litejobs.tasks.LitejobsBackend",
    "litejobs.tasks.backend.LitejobsBackend",
)


def task_queues() -> list[tuple[str, str]]:
    """The ``QUEUES`` of the Django Tasks backends on litejobs (``["default"]`` unless
    configured), as ``(queue, who uses it)``."""
    from django.conf import settings as django_settings

    return [
        (queue, f"TASKS[{alias!r}]")
        for alias, config in (getattr(django_settings, "TASKS", None) or {}).items()
        if config.get("BACKEND") in BACKEND_PATHS
        for queue in config.get("QUEUES") or ["default"]
    ]


@functools.cache
def _parameters(func: Callable[..., Any], takes_context: bool) -> inspect.Signature:
    """The parameters a caller gives ``func`` (without the context a task may take)."""
    parameters = list(inspect.signature(func).parameters.values())
    return inspect.Signature(parameters[1:] if takes_context else parameters)


def check_arguments(task: Task[Any, Any], args: list[Any], kwargs: dict[str, Any]) -> None:
    """Refuse arguments the task's function cannot take (``argument-invalid``) at enqueue,
    before anything is written, rather than in every attempt of the worker."""
    signature = _parameters(task.func, task.takes_context)
    try:
        signature.bind(*args, **kwargs)
    except TypeError as error:
        raise InvalidInput(
            f"Task {task.module_path!r} cannot take these arguments ({error}); it takes "
            f"{signature}.",
            code="argument-invalid",
        ) from None


catalog.resolvers.register(TASK_PREFIX, definition_for_task)
queues.queue_users.register("django_tasks", task_queues)


class LitejobsBackend(BaseTaskBackend):
    """Runs Django Tasks on litejobs: transactional enqueue, durable rows, readable results."""

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def enqueue(
        self, task: Task[_P, _R], args: list[Any], kwargs: dict[str, Any]
    ) -> TaskResult[_P, _R]:
        self.validate_task(task)
        check_arguments(task, args, kwargs)
        definition = TaskJobDefinition(name=TASK_PREFIX + task.module_path, queue=task.queue_name)
        payload = encode_payload(
            definition.name,
            {"args": list(args), "kwargs": dict(kwargs)},
            settings.count("MAX_PAYLOAD_BYTES"),
        )
        now = clock.now()
        run_at = task.run_after or now
        row = PreparedRow(key=uuid.uuid4().hex, tenant="", payload=payload, concurrency_key=None)
        enqueued = insert_one(definition, row, (now, run_at), task.priority)
        return TaskResult(
            task=task,
            id=str(enqueued.id),
            status=TaskResultStatus.READY,
            enqueued_at=now,
            started_at=None,
            finished_at=None,
            last_attempted_at=None,
            args=list(args),
            kwargs=dict(kwargs),
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )

    def get_result(self, result_id: str) -> TaskResult[..., Any]:
        try:
            job = Job.objects.using(settings.DATABASE).get(
                pk=int(result_id), name__startswith=TASK_PREFIX
            )
        except (Job.DoesNotExist, ValueError, TypeError) as error:
            raise TaskResultDoesNotExist(result_id) from error
        task = import_string(job.name.removeprefix(TASK_PREFIX)).using(
            priority=job.priority, queue_name=job.queue
        )
        attempts = list(job.failed_attempts.order_by("number"))
        errors = [
            TaskError(exception_class_path=a.error_class, traceback=a.error_traceback)
            for a in attempts
        ]
        worker_ids = [a.worker for a in attempts]
        if job.state in (JobState.RUNNING, JobState.DONE) and job.lease_owner:
            worker_ids.append(job.lease_owner)
        result: TaskResult[..., Any] = TaskResult(
            task=task,
            id=str(job.id),
            status=_STATUS[job.state],
            enqueued_at=job.created_at,
            started_at=job.started_at,
            finished_at=job.finished_at,
            last_attempted_at=job.started_at,
            args=job.payload.get("args", []),
            kwargs=job.payload.get("kwargs", {}),
            backend=self.alias,
            errors=errors,
            worker_ids=worker_ids,
        )
        if job.state == JobState.DONE:
            # Django's TaskResult takes its return value only this way (its own backends do so).
            object.__setattr__(result, "_return_value", job.result)
        return result
