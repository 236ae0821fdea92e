"""The callables a job declares over its arguments — its idempotency key, its tenant and its
concurrency key (``Concurrency``) — each called with the arguments it names, as an enqueue
gives them."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..exceptions import DeclarationError, InvalidInput


class JobArguments(Protocol):
    """What a picker reads of its job's declaration: its name, the arguments its function
    takes by name (any, with ``**kwargs``) and those it declares sensitive."""

    name: str
    sensitive: tuple[str, ...]
    _accepted: set[str]
    _takes_any: bool


@dataclass(frozen=True)
class Concurrency:
    """At most ``limit`` runs at once fleet-wide among jobs whose ``key(...)`` is equal."""

    key: Callable[..., str]
    limit: int

    def __post_init__(self) -> None:
        if not callable(self.key):
            raise DeclarationError(
                "Concurrency.key must be a callable.", code="concurrency-invalid"
            )
        check_limit(self.limit)


def check_limit(limit: Any) -> None:
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise DeclarationError(
            f"A concurrency limit must be a whole number of 1 or more; got {limit!r}.",
            code="concurrency-invalid",
        )


class ArgumentPicker:
    """Calls a key/tenant/concurrency callable with the payload arguments it names.

    The signature is read once, at declaration: enqueue_many calls this 1,000 times a batch.
    The payload it is given holds the job function's defaults too (``prepare``), so a callable
    may name an argument the caller left to its default.
    """

    def __init__(self, func: Callable[..., Any], what: str, job: JobArguments) -> None:
        self.func = func
        self.what = what
        self.job_name = job.name
        parameters = inspect.signature(func).parameters.values()
        self.takes_all = any(p.kind is p.VAR_KEYWORD for p in parameters)
        self.names = tuple(
            p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        )
        self.required = tuple(
            p.name
            for p in parameters
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.default is p.empty
        )
        # Arguments of a job that takes **kwargs may be absent from one enqueue.
        self.check_given = job._takes_any
        # Called by name with the job's arguments: a required positional-only parameter, or
        # one no job argument fills, could never be given.
        unusable = [
            p.name
            for p in parameters
            if (p.kind is p.POSITIONAL_ONLY and p.default is p.empty)
            or (p.name in self.required and not job._takes_any and p.name not in job._accepted)
        ]
        if unusable:
            raise DeclarationError(
                f"Job {job.name!r}: its {what} callable takes {unusable}, which are not "
                f"arguments of the function ({', '.join(sorted(job._accepted))}). It is called "
                "with the job's arguments by name: name only those it needs, e.g. "
                "lambda order_id: f'receipt:{order_id}'.",
                code=f"{what.replace(' ', '-')}-invalid",
            )
        self._refuse_sensitive(job)

    def _refuse_sensitive(self, job: JobArguments) -> None:
        """A key, tenant or concurrency key is stored as it is and shown (the admin, its search,
        ``litejobs show``): it may not be built from an argument the job declares sensitive."""
        sensitive = [name for name in job.sensitive if self.takes_all or name in self.names]
        if not sensitive:
            return
        others = sorted(job._accepted - set(job.sensitive))
        example = others[0] if others else "order_id"
        raise DeclarationError(
            f"Job {job.name!r}: its {self.what} callable "
            + ("takes **kwargs, so it is given" if self.takes_all else "takes")
            + f" {sensitive}, declared sensitive=. The {self.what} is stored as it is and shown "
            "in the admin, its search and `litejobs show`: build it from arguments that are "
            f"not sensitive ({', '.join(others) or 'add one'}), such as an id: "
            f"lambda {example}: f'...:{{{example}}}'.",
            code=f"{self.what.replace(' ', '-')}-sensitive",
        )

    def __call__(self, payload: Mapping[str, Any]) -> Any:
        if self.check_given:
            missing = [name for name in self.required if name not in payload]
            if missing:
                raise InvalidInput(
                    f"The {self.what} of job {self.job_name!r} needs the arguments {missing}, "
                    "which this enqueue does not give.",
                    code="argument-invalid",
                )
        try:
            if self.takes_all:
                return self.func(**payload)
            return self.func(**{name: payload[name] for name in self.names if name in payload})
        except Exception as error:
            # Its text is not repeated: it may quote the arguments (it is this error's cause).
            raise InvalidInput(
                f"The {self.what} callable of job {self.job_name!r} raised "
                f"{type(error).__name__}, so nothing was enqueued. Fix the callable (or the "
                "arguments it was given); the error it raised is chained as the cause.",
                code="key-callable-failed",
            ) from error
