"""``@job``: the declaration of a job, and its ``enqueue`` / ``enqueue_many``."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, cast, overload

from ..conf import settings
from ..core import clock
from ..core.durations import parse_duration
from ..core.payloads import encode_payload
from ..core.retry import Retry
from ..core.spelling import unknown_option
from ..core.tracing import current_traceparent
from ..exceptions import DeclarationError, InvalidInput, LitejobsError
from . import catalog, endings, placement, versions
from .arguments import ArgumentPicker, Concurrency, check_limit
from .context import RUNNING
from .enqueue import CHUNK, Enqueued, PreparedRow, insert_many, insert_one
from .ratelimits import Rate, check_rate

RESERVED_OPTIONS = ("delay", "run_at", "priority", "depends_on", "on_upstream_failure")
MAX_BATCH = 10_000
QUEUE_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")


class JobDefinition:
    """A declared job. Created by ``@job``; enqueue it with ``.enqueue(**arguments)``."""

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        key: Callable[..., str] | None,
        name: str | None = None,
        queue: str = "default",
        retry: Retry | dict[str, Any] | int | None = None,
        timeout: timedelta | str | float | None = None,
        priority: int = 0,
        tenant: Callable[..., str | None] | None = None,
        concurrency: int | Concurrency | None = None,
        rate: Rate | None = None,
        atomic: bool = True,
        sensitive: Iterable[str] = (),
        dead_letter: bool = True,
        version: int = 1,
        upgrade: Mapping[int, Callable[[dict[str, Any]], dict[str, Any]]] | None = None,
        on_settled: Callable[[Any], Any] | None = None,
        debounce: timedelta | str | float | None = None,
    ) -> None:
        self.func = func
        self.name = name or default_name(func)
        # Options, each checked on its own, in the order problems are reported.
        self.key = self._check_key(key)
        self.queue = queue_name(queue, what=f"Job {self.name!r}")
        self.retry = (
            Retry.coerce(retry)
            if retry is not None
            else settings.or_default("DEFAULT_RETRY", Retry.coerce)
        )
        self.timeout = self._check_timeout(timeout)
        self.priority = _check_priority(priority, DeclarationError)
        self.tenant = self._check_tenant(tenant)
        self.concurrency = self._check_concurrency(concurrency)
        self.rate = check_rate(rate, self.name)
        self.atomic = bool(atomic)
        self.sensitive = tuple(sensitive)
        self.dead_letter = bool(dead_letter)
        self.version, self.upgrade = versions.check_version(self.name, version, upgrade)
        self.on_settled = endings.check_on_settled(self.name, on_settled)
        self.debounce = endings.check_debounce(self.name, debounce)
        self._read_signature(func)
        # The callables over the arguments, checked against the signature.
        self._key = ArgumentPicker(self.key, "key", self)
        self._tenant = ArgumentPicker(tenant, "tenant", self) if tenant is not None else None
        self._concurrency_key = (
            ArgumentPicker(concurrency.key, "concurrency key", self)
            if isinstance(concurrency, Concurrency)
            else None
        )
        self._rate_key = (
            ArgumentPicker(self.rate.key, "rate key", self)
            if self.rate is not None and self.rate.key is not None
            else None
        )
        self.__doc__ = func.__doc__
        self.__name__ = func.__name__
        self.__module__ = func.__module__
        self.__wrapped__ = func
        catalog.register(self)

    def __repr__(self) -> str:
        return f"<job {self.name}>"

    def _check_key(self, key: Callable[..., str] | None) -> Callable[..., str]:
        """The idempotency key is required: two runs of the same work must share one."""
        if key is None:
            raise DeclarationError(
                f"Job {self.name!r} has no idempotency key. Add key=lambda ...: f'...' to its "
                "@job declaration, built from the arguments that make two runs the same work "
                "(e.g. key=lambda order_id: f'receipt:{order_id}').",
                code="key-missing",
            )
        if not callable(key):
            raise DeclarationError(
                f"Job {self.name!r}: key= must be a callable that takes the job's arguments "
                "(by name) and answers the key, e.g. key=lambda order_id: f'receipt:{order_id}'; "
                f"got a {type(key).__name__}. For one live run whatever the arguments, write "
                "key=lambda: 'name'.",
                code="key-invalid",
            )
        return key

    def _check_timeout(self, timeout: timedelta | str | float | None) -> timedelta:
        try:
            return (
                parse_duration(timeout, name=f"timeout of job {self.name!r}", allow_zero=False)
                if timeout is not None
                else settings.duration_or_default("DEFAULT_TIMEOUT")
            )
        except InvalidInput as exc:
            raise DeclarationError(exc.args[0], code="timeout-invalid") from exc

    def _check_tenant(
        self, tenant: Callable[..., str | None] | None
    ) -> Callable[..., str | None] | None:
        if tenant is not None and not callable(tenant):
            raise DeclarationError(
                f"Job {self.name!r}: tenant= must be a callable over the arguments.",
                code="tenant-invalid",
            )
        return tenant

    def _check_concurrency(self, concurrency: int | Concurrency | None) -> int | Concurrency | None:
        """A fleet-wide limit on the job's name (a number), or one per key (``Concurrency``)."""
        if isinstance(concurrency, int) and not isinstance(concurrency, bool):
            check_limit(concurrency)
        elif concurrency is not None and not isinstance(concurrency, Concurrency):
            raise DeclarationError(
                f"Job {self.name!r}: concurrency= takes a number or litejobs.Concurrency(key, "
                f"limit); got {concurrency!r}.",
                code="concurrency-invalid",
            )
        return concurrency

    def _read_signature(self, func: Callable[..., Any]) -> None:
        """The function's arguments, as each enqueue checks and stores them."""
        self._signature = inspect.signature(func)
        self._check_signature()
        parameters = list(self._signature.parameters.values())[1:]
        keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        self._accepted = {p.name for p in parameters if p.kind in keyword}
        self._required = {p.name for p in parameters if p.kind in keyword and p.default is p.empty}
        self._takes_any = any(p.kind is p.VAR_KEYWORD for p in parameters)
        self._defaults = self._stored_defaults(parameters)
        self._positional = tuple(p.name for p in parameters if p.kind is not p.KEYWORD_ONLY)

    def _check_signature(self) -> None:
        parameters = list(self._signature.parameters.values())
        if not parameters or parameters[0].kind not in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ):
            raise DeclarationError(
                f"Job {self.name!r}: the function must take the run context as its first "
                "argument: def my_job(ctx, ...).",
                code="signature-invalid",
            )
        clashes = [p.name for p in parameters[1:] if p.name in RESERVED_OPTIONS]
        if clashes:
            raise DeclarationError(
                f"Job {self.name!r}: argument names {clashes} are enqueue options "
                f"({', '.join(RESERVED_OPTIONS)}); rename them.",
                code="signature-invalid",
            )
        unknown = [s for s in self.sensitive if s not in self._signature.parameters]
        if unknown:
            raise DeclarationError(
                f"Job {self.name!r}: sensitive= names {unknown}, which are not arguments of "
                "the function.",
                code="sensitive-invalid",
            )

    def _stored_defaults(self, parameters: list[inspect.Parameter]) -> dict[str, Any]:
        """The function's default arguments, which every stored payload includes.

        Stored, not left to the function: the key, tenant and concurrency key are derived from
        the same values the body runs with, even when a deploy changes a default between the
        enqueue and the run. So a default must be a JSON value, like any argument.
        """
        defaults = {}
        for p in parameters:
            if p.default is p.empty or p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                continue
            try:
                encode_payload(self.name, {p.name: p.default}, settings.count("MAX_PAYLOAD_BYTES"))
            except InvalidInput as error:
                raise DeclarationError(
                    f"Job {self.name!r}: the default of argument {p.name!r} ({p.default!r}) is "
                    "not a JSON value. Stored payloads include the defaults (the body, key and "
                    "tenant see the values of the enqueue); default to None, a number, a "
                    "string, a list or a dict.",
                    code="signature-invalid",
                ) from error
            defaults[p.name] = p.default
        return defaults

    def upgraded(self, payload: Mapping[str, Any], version: int) -> dict[str, Any]:
        """A payload stored at an older ``version``, lifted to this declaration's version."""
        return versions.lift(self.name, payload, version, self.version, self.upgrade)

    @property
    def max_attempts(self) -> int:
        """Attempts before the job is dead (the retry policy's maximum)."""
        return self.retry.attempts

    @property
    def concurrency_limit(self) -> int | None:
        """The fleet-wide limit, if the job declares one."""
        if self.concurrency is None:
            return None
        return self.concurrency if isinstance(self.concurrency, int) else self.concurrency.limit

    def invoke(self, ctx: Any, payload: Mapping[str, Any], version: int | None = None) -> Any:
        """Run the body with its stored arguments (the worker's one way in), upgraded first
        when they were stored at an older ``version``."""
        if version is not None and version < self.version:
            payload = self.upgraded(payload, version)
        token = RUNNING.set(ctx)
        try:
            return self.func(ctx, **payload)
        finally:
            RUNNING.reset(token)

    # Enqueueing ---------------------------------------------------------------------------

    def enqueue(
        self,
        *positional: Any,
        delay: timedelta | str | float | None = None,
        run_at: datetime | None = None,
        priority: int | None = None,
        depends_on: Iterable[int | Enqueued] | None = None,
        on_upstream_failure: str | None = None,
        **arguments: Any,
    ) -> Enqueued:
        """Enqueue one run; joins the caller's transaction (rollback: it never existed).

        Arguments are given by name (they are stored as a JSON object). A live job with the
        same key answers ``Enqueued(its_id, deduped=True)`` instead; with ``debounce=``, one
        not started yet is moved to now + debounce with these arguments. Inside an open batch
        the job joins it; ``depends_on`` (job ids or ``Enqueued``) makes it wait until each of
        those has ended, ``on_upstream_failure`` saying what it does when one did not succeed
        (``litejobs.batches``).
        """
        if positional:
            self._refuse_positional(len(positional))
        row = self.prepare(arguments)
        debounce = self.debounce is not None
        timing = self._debounced(delay, run_at) if debounce else self.timing(delay, run_at)
        priority = self.priority_for(priority)
        placer = placement.placer_for(depends_on, on_upstream_failure)
        if placer is None:
            return insert_one(self, row, timing, priority, debounce=debounce)
        placing = placement.Placing(depends_on, on_upstream_failure, timing[1])
        return placer.place(
            lambda: [insert_one(self, row, timing, priority, debounce=debounce)], placing
        )[0]

    def _debounced(self, delay: object, run_at: datetime | None) -> tuple[datetime, datetime]:
        """``(now, now + debounce)``: a debounced job's quiet period sets when it runs."""
        if delay is not None or run_at is not None:
            raise InvalidInput(
                f"Job {self.name!r} declares debounce=, which sets when it runs (its quiet "
                "period after the last enqueue of its key): drop delay= and run_at=.",
                code="option-conflict",
            )
        now = clock.now()
        return now, now + cast(timedelta, self.debounce)

    def enqueue_many(
        self,
        arguments: Iterable[Mapping[str, Any]],
        *,
        delay: timedelta | str | float | None = None,
        run_at: datetime | None = None,
        priority: int | None = None,
    ) -> list[Enqueued]:
        """Enqueue many runs of this job: one statement per 1,000, one answer per input in order.

        More than 10,000 inputs are refused before anything is written, and a bad input
        leaves nothing written; the whole call is one transaction (it commits or rolls back
        with the caller's).
        """
        if self.debounce is not None:
            raise InvalidInput(
                f"Job {self.name!r} declares debounce=, which moves one waiting job per key: "
                "enqueue its runs one at a time with enqueue(...).",
                code="debounce-many",
            )
        inputs = self._inputs(arguments)
        if len(inputs) > MAX_BATCH:
            raise InvalidInput(
                f"enqueue_many got {len(inputs)} inputs for job {self.name!r}; the limit is "
                f"{MAX_BATCH}. Split the source into pages of at most {MAX_BATCH}.",
                code="batch-too-large",
            )
        for number, item in enumerate(inputs):
            if not isinstance(item, Mapping):
                raise InvalidInput(
                    f"enqueue_many of job {self.name!r} takes a list of dicts of arguments "
                    f"(one per run); input {number} is a {type(item).__name__}, e.g. "
                    f"[{{{', '.join(f'{n!r}: ...' for n in sorted(self._required))}}}, ...].",
                    code="argument-invalid",
                )
        max_bytes = settings.count("MAX_PAYLOAD_BYTES")
        if not inputs:
            return []
        # Each input is validated as its chunk is made, while the previous chunk is inserted;
        # past the first chunk a bad input rolls the call back to a savepoint.
        timing = self.timing(delay, run_at)

        def insert() -> list[Enqueued]:
            return insert_many(
                self,
                (self.prepare(dict(item), max_bytes) for item in inputs),
                timing,
                self.priority_for(priority),
                savepoint=len(inputs) > CHUNK,
            )

        placer = placement.placer_for()
        if placer is None:
            return insert()
        return list(placer.place(insert, placement.Placing(None, None, timing[1])))

    def _inputs(self, arguments: Any) -> list[Any]:
        """``enqueue_many``'s inputs as a list; anything but an iterable of them (``None``, one
        dict of arguments, a string) is refused (``argument-invalid``)."""
        if isinstance(arguments, Iterable) and not isinstance(arguments, Mapping | str | bytes):
            return list(arguments)
        raise InvalidInput(
            f"enqueue_many of job {self.name!r} takes a list of dicts of arguments (one per "
            f"run); got {'None' if arguments is None else 'a ' + type(arguments).__name__}. "
            f"For one run, call {self.__name__}.enqueue(...).",
            code="argument-invalid",
        )

    def _refuse_positional(self, count: int) -> None:
        named = ", ".join(f"{name}=..." for name in self._positional[:count]) or "name=..."
        raise InvalidInput(
            f"Job {self.name!r} takes its arguments by name (they are stored as JSON by name): "
            f"call {self.__name__}.enqueue({named}), not with {count} positional value(s).",
            code="argument-positional",
        )

    def prepare(self, arguments: dict[str, Any], max_bytes: int | None = None) -> PreparedRow:
        """Validate one set of arguments and compute its key, tenant and concurrency key.

        The payload holds the function's defaults for arguments the caller left out.
        """
        given = arguments.keys()
        if not (self._required <= given and (self._takes_any or given <= self._accepted)):
            parameters = list(self._signature.parameters.values())[1:]
            raise InvalidInput(
                f"Job {self.name!r} got unexpected arguments {sorted(given - self._accepted)} "
                f"and lacks required arguments {sorted(self._required - given)}; it takes "
                f"({', '.join(str(p) for p in parameters)}).",
                code="argument-invalid",
            )
        if self._defaults and not self._defaults.keys() <= given:
            arguments = {**self._defaults, **arguments}
        payload = encode_payload(
            self.name, arguments, max_bytes or settings.count("MAX_PAYLOAD_BYTES")
        )
        key = self._derived("key", self._key, arguments, max_length=300)
        tenant = ""
        if self._tenant is not None:
            tenant = self._derived("tenant", self._tenant, arguments, max_length=200, empty=True)
        return PreparedRow(key, tenant, payload, *self._limit_keys(arguments))

    def _limit_keys(self, arguments: Mapping[str, Any]) -> tuple[str | None, str | None]:
        """The run's concurrency key and rate key (None: the declaration's own or none)."""
        concurrency_key = None
        if isinstance(self.concurrency, int):
            concurrency_key = self.name
        elif self._concurrency_key is not None:
            concurrency_key = self._derived(
                "concurrency key", self._concurrency_key, arguments, max_length=200
            )
        rate_key = None
        if self._rate_key is not None:
            rate_key = self._derived("rate key", self._rate_key, arguments, max_length=200)
        return concurrency_key, rate_key

    def _derived(
        self,
        what: str,
        picker: Callable[[Mapping[str, Any]], Any],
        arguments: Mapping[str, Any],
        *,
        max_length: int,
        empty: bool = False,
    ) -> str:
        value = picker(arguments)
        if empty and value is None:
            return ""
        if not isinstance(value, str) or not (empty or value) or len(value) > max_length:
            answered = (
                f"a string of {len(value)} characters"
                if isinstance(value, str)
                else f"a {type(value).__name__}"
            )
            raise InvalidInput(
                f"The {what} of job {self.name!r} must be a non-empty string of at most "
                f"{max_length} characters; its callable answered {answered}.",
                code=f"{what.replace(' ', '-')}-invalid",
            )
        return value

    def timing(self, delay: object, run_at: datetime | None) -> tuple[datetime, datetime]:
        """``(now, run_at)`` from the enqueue options, refusing naive or negative values."""
        now = clock.now()
        if delay is not None and run_at is not None:
            raise InvalidInput(
                f"Job {self.name!r}: give delay= or run_at=, not both.", code="option-conflict"
            )
        if run_at is not None:
            if not isinstance(run_at, datetime):
                raise InvalidInput(
                    f"run_at must be an aware datetime; got {type(run_at).__name__}.",
                    code="run-at-invalid",
                )
            if run_at.tzinfo is None or run_at.utcoffset() is None:
                raise InvalidInput(
                    f"run_at {run_at.isoformat()} has no time zone. Pass an aware datetime, "
                    "e.g. datetime(..., tzinfo=UTC) or django.utils.timezone.make_aware(...).",
                    code="run-at-naive",
                )
            return now, run_at
        if delay is not None:
            try:
                return now, now + parse_duration(delay, name="delay")
            except InvalidInput as exc:
                raise InvalidInput(
                    f"Job {self.name!r}: {exc.args[0]} Pass zero or a positive duration of at "
                    "most 100 years, such as '10m'.",
                    code="delay-negative" if _is_negative(delay) else "delay-invalid",
                ) from exc
        return now, now

    def priority_for(self, priority: int | None) -> int:
        """The priority of a run: the option if given, else the declaration's."""
        return self.priority if priority is None else _check_priority(priority, InvalidInput)

    def traceparent(self) -> str:
        """The trace context to store with a new run."""
        return current_traceparent()

    @property
    def module(self) -> str:
        """The module that declares the job, stored with each run: a worker that does not
        know the job's name imports it (when it lies inside an installed app)."""
        return str(self.func.__module__)


def queue_name(queue: Any, *, what: str = "A queue") -> str:
    """``queue`` if it is a valid queue name, else ``DeclarationError`` (``queue-invalid``)."""
    if not isinstance(queue, str) or not QUEUE_NAME.match(queue):
        raise DeclarationError(
            f"{what}: queue {queue!r} must be 1-100 letters, digits, or '_.:-'.",
            code="queue-invalid",
        )
    return queue


def default_name(func: Callable[..., Any]) -> str:
    """``app_label.function`` for a function in an installed app, else ``module.function``."""
    from django.apps import apps

    app = apps.get_containing_app_config(func.__module__) if apps.apps_ready else None
    return f"{app.label if app else func.__module__}.{func.__name__}"


def _is_negative(delay: Any) -> bool:
    if isinstance(delay, timedelta):
        return delay < timedelta(0)
    if isinstance(delay, int | float) and not isinstance(delay, bool):
        return delay < 0
    return isinstance(delay, str) and delay.strip().startswith("-")


def _check_priority(priority: Any, error: type[LitejobsError]) -> int:
    if not isinstance(priority, int) or isinstance(priority, bool) or not -100 <= priority <= 100:
        raise error(
            f"priority must be a whole number from -100 to 100 (higher runs first); got "
            f"{priority!r}.",
            code="priority-invalid",
        )
    return priority


@overload
def job(func: Callable[..., Any], /, **options: Any) -> JobDefinition: ...


@overload
def job(func: None = None, /, **options: Any) -> Callable[[Callable[..., Any]], JobDefinition]: ...


def job(
    func: Callable[..., Any] | None = None,
    /,
    **options: Any,
) -> JobDefinition | Callable[[Callable[..., Any]], JobDefinition]:
    """Declare a job: ``@job(key=lambda order_id: f"receipt:{order_id}", ...)``.

    Options: ``key`` (required), ``name``, ``queue``, ``retry``, ``timeout``, ``priority``,
    ``tenant``, ``concurrency``, ``rate`` (a ``Rate``: starts per window), ``atomic``,
    ``sensitive``, ``dead_letter``, ``version`` and ``upgrade`` (the payload's schema version
    and the functions lifting older payloads), ``on_settled`` (a hook told how each run
    ended) and ``debounce`` (a quiet period: an enqueue moves the job of its key not started
    yet instead of adding one).
    See the README.
    """
    if func is not None:
        return _declare(func, options)

    def decorate(f: Callable[..., Any]) -> JobDefinition:
        return _declare(f, options)

    return decorate


#: The options ``@job`` takes: the keyword parameters of ``JobDefinition``.
JOB_OPTIONS = tuple(inspect.signature(JobDefinition).parameters)[1:]


def _declare(func: Callable[..., Any], options: dict[str, Any]) -> JobDefinition:
    """The ``JobDefinition`` of ``func``; an unknown option (a typo) is a declaration error
    naming the option it most likely misspells."""
    unknown = [option for option in options if option not in JOB_OPTIONS]
    if unknown:
        name = options.get("name") or default_name(func)
        raise unknown_option(f"Job {name!r}", unknown[0], JOB_OPTIONS, "@job")
    return JobDefinition(func, **{"key": None, **options})
