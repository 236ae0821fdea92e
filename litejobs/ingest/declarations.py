"""What a pipeline is made of: its ``@drop`` and ``@enrich`` steps, its ``Buffer`` and its
``Freshness``, checked when it is declared, and the registry of declared pipelines.

Order is the pipeline's meaning, so steps run in the order listed, and each says what it may
do: a drop step names the reasons it may answer (members of the pipeline's closed set), an
enrich step the sources it may read. A declaration that breaks a rule is refused with a
``DeclarationError`` whose code names the rule (``pipeline()``'s checks are ``options``');
discovery keeps it for ``manage.py check``.
"""

from __future__ import annotations

import enum
import functools
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
class _BufferValues:
    """A buffer's options, each as what it holds: ``Buffer`` reads them as people write them,
    checks them, and keeps them here."""

    capacity: int
    overflow: Overflow
    reason: enum.Enum | None
    wait: timedelta


class Buffer(_BufferValues):
    """The table fed records wait in: ``capacity`` records at most, and what happens past it
    (``overflow``): ``"block"`` makes ``feed()`` wait up to ``wait`` for room, then refuses
    it; ``"drop_oldest"`` drops the oldest buffered records with ``reason``; ``"page"`` keeps
    the records and pages an operator (an ERROR log line, an admin alert, a metric)."""

    def __init__(
        self,
        capacity: int = 100_000,
        overflow: Overflow | str = Overflow.BLOCK,
        reason: enum.Enum | None = None,
        wait: timedelta | str | float = "30s",
    ) -> None:
        if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 1:
            raise DeclarationError(
                f"Buffer(capacity=...) is a whole number of records, 1 or more; got {capacity!r}.",
                code="pipeline-invalid",
            )
        if overflow not in tuple(Overflow):
            raise DeclarationError(
                f"Buffer(overflow=...) is one of {', '.join(map(repr, map(str, Overflow)))}; "
                f"got {overflow!r}.",
                code="pipeline-invalid",
            )
        past = Overflow(overflow)
        waits = parse_duration(wait, name="Buffer(wait=...)")
        if past is Overflow.DROP_OLDEST and not isinstance(reason, enum.Enum):
            raise DeclarationError(
                "Buffer(overflow='drop_oldest') needs reason=, the member of the pipeline's "
                "reason set its dropped records carry (such as Reason.OVERFLOW).",
                code="pipeline-reason-outside-set",
            )
        super().__init__(capacity, past, reason, waits)


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
class _FilesValues:
    """Where file imports read, as ``Files`` checked it: ``prefix`` is ``""`` or a folder
    ending in one ``/``."""

    prefix: str
    storage: str


class Files(_FilesValues):
    """Where a pipeline's file imports may read: the files under ``prefix`` (a folder such as
    ``"feeds/catalog/"``; ``""`` opens the whole storage) of ``storage`` (an alias of
    ``STORAGES``). ``import_file()`` and the admin's import form reach no other file, so a
    user who may start imports cannot read another team's files through the pipeline."""

    def __init__(self, prefix: str, storage: str = "default") -> None:
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
        super().__init__(f"{prefix.strip('/')}/" if prefix.strip("/") else "", storage)

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


@dataclass(frozen=True, eq=False)
class Declaration:
    """A pipeline as declared: ``litejobs.pipeline`` checks its options and builds it."""

    name: str
    steps: tuple[DropStep | EnrichStep, ...]
    drop_reasons: type[enum.Enum]
    sink: Callable[[dict[str, Any]], Any]
    key: Callable[[Mapping[str, Any]], Any]
    sources: Mapping[str, Any]
    columns: tuple[str, ...] | None
    buffer: Buffer
    batch_size: int
    freshness: Freshness | None
    poison_after: int
    max_record_bytes: int
    files: Files | None
    sensitive: tuple[str, ...]
    module: str
    #: The globals of the module run that declared it: a module imported again after a failed
    #: import declares anew, while one run declaring a name twice is refused.
    namespace: Mapping[str, Any] = field(repr=False)

    @property
    def reasons(self) -> frozenset[enum.Enum]:
        """Every member of the closed reason set."""
        return frozenset(self.drop_reasons)

    @property
    def poison(self) -> enum.Enum | None:
        """The set's member a record whose steps keep raising is dropped with."""
        return poison_of(self.drop_reasons)

    def reason(self, value: Any) -> enum.Enum:
        """The member of the reason set ``value`` names (a member, its value or its name)."""
        for member in self.drop_reasons:
            if value in (member, member.value, member.name):
                return member
        raise InvalidInput(
            f"Pipeline {self.name!r} has no drop reason {value!r}; its reasons are "
            f"{', '.join(str(m.value) for m in self.drop_reasons)}.",
            code="ingest-reason-unknown",
        )


def poison_of(reasons: type[enum.Enum]) -> enum.Enum | None:
    """The member of the closed set of reasons a record whose steps keep raising is dropped
    with; None when the set has none."""
    return next((r for r in reasons if r.value == POISON), None)


def _duplicate(name: str, existing: Declaration, new: Declaration) -> DeclarationError:
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
pipelines: Registry[Declaration] = Registry("pipeline", duplicate=_duplicate, missing=_missing)
#: Every installed app's ``pipelines.py``: ``autodiscover`` imports them, keeping refused
#: declarations, which ``declaration_errors`` answers as (module, error).
discovery = Discovery("pipelines")
autodiscover = discovery.run
declaration_errors = discovery.errors
