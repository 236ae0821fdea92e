"""What a pipeline is made of: its ``@drop`` and ``@enrich`` steps, its ``Buffer`` and its
``Freshness``, checked when it is declared, and the registry of declared pipelines.

Order is the pipeline's meaning, so steps run in the order listed, and each says what it may
do: a drop step names the reasons it may answer (members of the pipeline's closed set), an
enrich step the sources it may read. A declaration that breaks a rule is refused with a
``DeclarationError`` whose code names the rule; discovery keeps it for ``manage.py check``.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

from ..core.discovery import Discovery
from ..core.durations import format_duration, parse_duration
from ..core.enums import FreshnessKind, Overflow
from ..core.registry import Registry
from ..exceptions import DeclarationError, InvalidInput
from .errors import PipelineNotFound, SourceUndeclared

__all__ = [
    "Buffer",
    "Declaration",
    "DropStep",
    "EnrichStep",
    "Files",
    "Freshness",
    "Sources",
    "drop",
    "enrich",
]

#: The reason a record whose step keeps raising is dropped with: the set's member of this value.
POISON = "poison"
#: The jobs of ingest pipelines (declared in ``litejobs.ingest.jobs``).
DRAIN_JOB = "litejobs.ingest_drain"
IMPORT_JOB = "litejobs.ingest_import"
CONSUME_JOB = "litejobs.ingest_consume"
#: A pipeline's name: its jobs' keys, concurrency keys, metrics labels and admin URL hold it.
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
#: Attempts a record's steps get before it is dropped as poison, unless the pipeline says.
POISON_AFTER = 3


class Step:
    """A marked step: still callable as the function it wraps (unit tests call it directly)."""

    kind = ""

    def __init__(self, func: Callable[..., Any]) -> None:
        if not callable(func):
            raise DeclarationError(
                f"@{self.kind} marks a function; got {func!r}.", code="pipeline-invalid"
            )
        self.func = func
        functools.update_wrapper(self, func)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    @property
    def name(self) -> str:
        """The step's name as operators see it: the function's qualified name."""
        return str(getattr(self.func, "__qualname__", repr(self.func)))

    def __repr__(self) -> str:
        return f"<{self.kind} step {self.name}>"


class DropStep(Step):
    """A ``@drop`` step: answers one of its ``reasons`` (the record is dropped) or None."""

    kind = "drop"

    def __init__(self, func: Callable[..., Any], reasons: frozenset[enum.Enum]) -> None:
        super().__init__(func)
        self.reasons = reasons


class EnrichStep(Step):
    """An ``@enrich`` step: called as ``step(record, sources)``, answers the record."""

    kind = "enrich"

    def __init__(self, func: Callable[..., Any], sources: frozenset[str]) -> None:
        super().__init__(func)
        self.sources = sources


def drop(*, reasons: Iterable[enum.Enum]) -> Callable[[Callable[..., Any]], DropStep]:
    """Mark a step that may drop a record: it answers a member of ``reasons`` (the record is
    dropped with that reason) or None (the record goes on). Anything else it answers is an
    error on that record, never a silent drop."""
    members = _reasons(reasons)
    return lambda func: DropStep(func, members)


def enrich(*, sources: Iterable[str] = ()) -> Callable[[Callable[..., Any]], EnrichStep]:
    """Mark a step that enriches a record: called as ``step(record, sources)`` where
    ``sources`` holds only the pipeline's sources named here; it answers the record."""
    if isinstance(sources, str) or not all(isinstance(s, str) and s for s in sources):
        raise DeclarationError(
            f"@enrich(sources=...) takes a set of source names, such as {{'rates'}}; "
            f"got {sources!r}.",
            code="pipeline-invalid",
        )
    names = frozenset(sources)
    return lambda func: EnrichStep(func, names)


def _reasons(reasons: Any) -> frozenset[enum.Enum]:
    listed = isinstance(reasons, list | tuple | set | frozenset)
    if not listed or not reasons or not all(isinstance(r, enum.Enum) for r in reasons):
        raise DeclarationError(
            "@drop(reasons=...) takes a non-empty set of members of the pipeline's reason "
            f"enum, such as {{Reason.DISCONTINUED}}; got {reasons!r}.",
            code="pipeline-invalid",
        )
    return frozenset(reasons)


@dataclass(frozen=True)
class Buffer:
    """The table fed records wait in: ``capacity`` records at most, and what happens past it
    (``overflow``): ``"block"`` makes ``feed()`` wait up to ``wait`` for room, then refuses
    it; ``"drop_oldest"`` drops the oldest buffered records with ``reason``; ``"page"`` keeps
    the records and pages an operator (an ERROR log line, an admin alert, a metric)."""

    capacity: int = 100_000
    overflow: Overflow | str = Overflow.BLOCK
    reason: enum.Enum | None = None
    wait: timedelta | str | float = "30s"

    def __post_init__(self) -> None:
        capacity = self.capacity
        if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 1:
            raise DeclarationError(
                f"Buffer(capacity=...) is a whole number of records, 1 or more; got {capacity!r}.",
                code="pipeline-invalid",
            )
        if self.overflow not in tuple(Overflow):
            raise DeclarationError(
                f"Buffer(overflow=...) is one of {', '.join(map(repr, map(str, Overflow)))}; "
                f"got {self.overflow!r}.",
                code="pipeline-invalid",
            )
        object.__setattr__(self, "overflow", Overflow(self.overflow))
        object.__setattr__(self, "wait", parse_duration(self.wait, name="Buffer(wait=...)"))
        if self.overflow is Overflow.DROP_OLDEST and not isinstance(self.reason, enum.Enum):
            raise DeclarationError(
                "Buffer(overflow='drop_oldest') needs reason=, the member of the pipeline's "
                "reason set its dropped records carry (such as Reason.OVERFLOW).",
                code="pipeline-reason-outside-set",
            )

    @property
    def waits(self) -> timedelta:
        """How long a blocked ``feed()`` waits for room."""
        return parse_duration(self.wait, name="Buffer(wait=...)")


@dataclass(frozen=True)
class Freshness:
    """What readers of the pipeline's data may expect: ``Freshness.bounded("15m")`` (at most
    that old while the pipeline is healthy) or ``Freshness.advisory(authority="vendor")``
    (another system is the authority; this is its copy)."""

    kind: FreshnessKind
    within: timedelta | None = None
    authority: str = ""

    @classmethod
    def bounded(cls, within: timedelta | str | float) -> Freshness:
        """The data is at most ``within`` old while the pipeline keeps up."""
        within = parse_duration(within, name="Freshness.bounded(within)", allow_zero=False)
        return cls(FreshnessKind.BOUNDED, within=within)

    @classmethod
    def advisory(cls, *, authority: str) -> Freshness:
        """The data is a copy; ``authority`` names the system to ask for the truth."""
        if not isinstance(authority, str) or not authority:
            raise DeclarationError(
                "Freshness.advisory(authority=...) names the system that holds the truth, "
                "such as authority='vendor'.",
                code="pipeline-invalid",
            )
        return cls(FreshnessKind.ADVISORY, authority=authority)

    def __str__(self) -> str:
        if self.kind is FreshnessKind.BOUNDED and self.within is not None:
            return f"bounded: at most {format_duration(self.within)} old"
        return f"advisory: {self.authority} is the authority"


@dataclass(frozen=True)
class Files:
    """Where a pipeline's file imports may read: the files under ``prefix`` (a folder such as
    ``"feeds/catalog/"``; ``""`` opens the whole storage) of ``storage`` (an alias of
    ``STORAGES``). ``import_file()`` and the admin's import form reach no other file, so a
    user who may start imports cannot read another team's files through the pipeline."""

    prefix: str
    storage: str = "default"

    def __post_init__(self) -> None:
        prefix, storage = self.prefix, self.storage
        if not isinstance(storage, str) or not storage:
            raise DeclarationError(
                f"Files(storage=...) is an alias of STORAGES, such as 'default'; got {storage!r}.",
                code="pipeline-invalid",
            )
        parts = prefix.strip("/").split("/") if isinstance(prefix, str) else [""]
        if (
            not isinstance(prefix, str)
            or prefix.startswith("/")
            or "\\" in prefix
            or (prefix.strip("/") and not all(part not in ("", ".", "..") for part in parts))
        ):
            raise DeclarationError(
                "Files(prefix=...) is a folder of the storage, such as 'feeds/catalog/' (or '' "
                f"for the whole storage), without '..' nor a leading '/'; got {prefix!r}.",
                code="pipeline-invalid",
            )
        object.__setattr__(self, "prefix", f"{prefix.strip('/')}/" if prefix.strip("/") else "")

    def __str__(self) -> str:
        return f"{self.storage}:{self.prefix or '(the whole storage)'}"


class Sources(Mapping[str, Any]):
    """The sources one enrich step may read: reading any other raises
    ``SourceUndeclared`` (``ingest-source-undeclared``)."""

    def __init__(self, step: EnrichStep, sources: Mapping[str, Any]) -> None:
        self._step = step
        self._sources = {name: sources[name] for name in step.sources if name in sources}

    def __getitem__(self, name: str) -> Any:
        if name not in self._step.sources:
            raise SourceUndeclared(
                f"Step {self._step.name} read source {name!r}, which its @enrich(sources=...) "
                f"does not name; add it there (it names {sorted(self._step.sources)})."
            )
        return self._sources[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._sources)

    def __len__(self) -> int:
        return len(self._sources)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]


@dataclass(eq=False)
class Declaration:
    """A pipeline as declared: checked by ``__post_init__``; ``litejobs.pipeline`` builds it."""

    name: str
    steps: tuple[Any, ...]
    drop_reasons: Any
    sink: Callable[[dict[str, Any]], Any]
    key: Callable[[Mapping[str, Any]], Any]
    sources: Mapping[str, Any] = field(default_factory=dict)
    columns: tuple[str, ...] | None = None
    buffer: Buffer = field(default_factory=Buffer)
    batch_size: int = 200
    freshness: Freshness | None = None
    poison_after: int = POISON_AFTER
    max_record_bytes: int = 1_048_576
    files: Files | None = None
    sensitive: tuple[str, ...] = ()
    module: str = ""
    #: The globals of the module run that declared it: a module imported again after a failed
    #: import declares anew, while one run declaring a name twice is refused.
    namespace: Mapping[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        _check_name(self.name)
        self.steps = tuple(self.steps)
        self._check_reasons()
        for step in self.steps:
            self._check_step(step)
        self._check_numbers()
        self._check_callables()
        if self.columns is not None:
            self.columns = columns(self.name, self.columns)
        self.sensitive = field_names(self.name, "sensitive", self.sensitive)
        self._check_sensitive()
        if self.buffer.reason is not None and self.buffer.reason not in self.reasons:
            raise self._invalid(
                f"Buffer(reason={self.buffer.reason!r}) is not a member of drop_reasons "
                f"({self.drop_reasons.__name__}).",
                "pipeline-reason-outside-set",
            )

    def _invalid(self, message: str, code: str = "pipeline-invalid") -> DeclarationError:
        return DeclarationError(f"Pipeline {self.name!r}: {message}", code=code)

    def _check_reasons(self) -> None:
        reasons = self.drop_reasons
        if not (isinstance(reasons, type) and issubclass(reasons, enum.Enum)) or not len(reasons):
            raise self._invalid(
                "drop_reasons= names the closed set of reasons its records may be dropped "
                "for: an Enum class with at least one member (and a 'poison' member for "
                f"records whose steps keep failing); got {reasons!r}.",
                "pipeline-reasons-missing",
            )
        if self.poison is None:
            raise self._invalid(
                f"drop_reasons={reasons.__name__} has no member whose value is 'poison': a "
                "record whose steps keep raising is dropped with it. Add POISON = 'poison'.",
                "pipeline-reasons-missing",
            )

    def _check_step(self, step: Any) -> None:
        if isinstance(step, DropStep):
            outside = sorted(str(r) for r in step.reasons if r not in self.reasons)
            if outside:
                raise self._invalid(
                    f"drop step {step.name} names {', '.join(outside)}, outside drop_reasons "
                    f"({self.drop_reasons.__name__}).",
                    "pipeline-reason-outside-set",
                )
        elif isinstance(step, EnrichStep):
            undeclared = sorted(step.sources - set(self.sources))
            if undeclared:
                raise self._invalid(
                    f"enrich step {step.name} reads {', '.join(map(repr, undeclared))}, which "
                    "sources= does not declare.",
                    "pipeline-source-undeclared",
                )
        else:
            raise self._invalid(
                f"step {getattr(step, '__qualname__', step)!r} is marked neither @drop nor "
                "@enrich; mark it with the one it does.",
                "pipeline-step-unmarked",
            )

    def _check_numbers(self) -> None:
        for option, low, high in (
            ("batch_size", 1, 10_000),
            ("poison_after", 1, 100),
            ("max_record_bytes", 64, 1 << 30),
        ):
            value = getattr(self, option)
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise self._invalid(f"{option}= is a whole number from {low} to {high}.")

    def _check_callables(self) -> None:
        for option in ("sink", "key"):
            if not callable(getattr(self, option)):
                raise self._invalid(f"{option}= must be a function of the record.")
        if not isinstance(self.buffer, Buffer):
            raise self._invalid("buffer= is a Buffer(capacity=..., overflow=...).")
        if not isinstance(self.sources, Mapping):
            raise self._invalid("sources= is a dict of source name to value.")
        if self.freshness is not None and not isinstance(self.freshness, Freshness):
            raise self._invalid("freshness= is Freshness.bounded(...) or Freshness.advisory(...).")
        if self.files is not None and not isinstance(self.files, Files):
            raise self._invalid("files= is Files(prefix=..., storage=...).")

    def _check_sensitive(self) -> None:
        """Each sensitive field names a declared column, when the pipeline declares them (a
        dotted name: a field inside that column's value)."""
        unknown = [
            n for n in self.sensitive if self.columns and n.partition(".")[0] not in self.columns
        ]
        if unknown:
            raise self._invalid(
                f"sensitive= names {', '.join(map(repr, unknown))}, which columns= does not "
                f"declare ({', '.join(self.columns or ())})."
            )

    @property
    def reasons(self) -> frozenset[enum.Enum]:
        """Every member of the closed reason set."""
        return frozenset(self.drop_reasons)

    @property
    def poison(self) -> enum.Enum | None:
        """The set's member a record whose steps keep raising is dropped with."""
        return next((r for r in self.drop_reasons if r.value == POISON), None)

    def reason(self, value: Any) -> enum.Enum:
        """The member of the reason set ``value`` names (a member, its value or its name)."""
        for member in self.drop_reasons:
            if value in (member, member.value, member.name):
                return member  # type: ignore[no-any-return]
        raise InvalidInput(
            f"Pipeline {self.name!r} has no drop reason {value!r}; its reasons are "
            f"{', '.join(str(m.value) for m in self.drop_reasons)}.",
            code="ingest-reason-unknown",
        )


def _check_name(name: Any) -> None:
    if not isinstance(name, str) or not NAME.match(name):
        raise DeclarationError(
            "A pipeline's name is 1-100 letters, digits or '_.-', such as 'shop.catalog'; got "
            f"{name!r}.",
            code="pipeline-invalid",
        )


def columns(name: str, declared: Any) -> tuple[str, ...]:
    """The declared columns, each once (``pipeline-invalid`` otherwise)."""
    listed = field_names(name, "columns", declared)
    if not listed:
        raise DeclarationError(
            f"Pipeline {name!r}: columns= lists the record's field names, such as "
            "['sku', 'name', 'price']; got none.",
            code="pipeline-invalid",
        )
    if len(set(listed)) != len(listed):
        raise DeclarationError(
            f"Pipeline {name!r}: columns= names a column twice.", code="pipeline-invalid"
        )
    return listed


def field_names(name: str, option: str, names: Any) -> tuple[str, ...]:
    """``names`` as a tuple of field names, or ``pipeline-invalid``: a list or tuple of
    non-empty texts (a text alone is refused: ``"sku"`` is no list of three names)."""
    listed = tuple(names) if isinstance(names, list | tuple) else None
    if listed is None or not all(isinstance(n, str) and n for n in listed):
        raise DeclarationError(
            f"Pipeline {name!r}: {option}= lists record field names, such as "
            f"['sku', 'name']; got {names!r}.",
            code="pipeline-invalid",
        )
    return listed


def _duplicate(name: str, existing: Any, new: Any) -> DeclarationError:
    where = (
        f"twice in {new.module}"
        if existing.module == new.module
        else f"in {existing.module} and {new.module}"
    )
    return DeclarationError(
        f"Two pipelines are named {name!r} ({where}); rename one.", code="pipeline-duplicate"
    )


def register(declaration: D) -> D:
    """Keep ``declaration`` under its name: a name declared twice, in two modules or twice in
    one, is refused (``pipeline-duplicate``)."""
    existing = pipelines.get(declaration.name)
    if existing is not None and existing.namespace is declaration.namespace:
        raise _duplicate(declaration.name, existing, declaration)
    pipelines.register(declaration.name, declaration)
    return declaration


def _missing(name: str) -> PipelineNotFound:
    return PipelineNotFound(
        f"No installed app declares a pipeline named {name!r} (in its pipelines.py)."
    )


D = TypeVar("D", bound=Declaration)

#: The declared pipelines by name.
pipelines: Registry[Any] = Registry("pipeline", duplicate=_duplicate, missing=_missing)
discovery = Discovery("pipelines")


def autodiscover() -> None:
    """Import every installed app's ``pipelines.py``, keeping refused declarations."""
    discovery.run()


def declaration_errors() -> list[tuple[str, Exception]]:
    """The declarations autodiscovery refused, as (module, error)."""
    return discovery.errors()
