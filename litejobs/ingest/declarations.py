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
#: The bounds of a pipeline's numbers, in the order they are checked.
NUMBERS = (("batch_size", 1, 10_000), ("poison_after", 1, 100), ("max_record_bytes", 64, 1 << 30))


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
        return _poison(self.drop_reasons)

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


def _poison(reasons: type[enum.Enum]) -> enum.Enum | None:
    return next((r for r in reasons if r.value == POISON), None)


# The groups of pipeline()'s checks, in the order it reports problems -------------------------


def _refused(name: str, message: str, code: str = "pipeline-invalid") -> DeclarationError:
    return DeclarationError(f"Pipeline {name!r}: {message}", code=code)


def check_reasons(name: str, reasons: object) -> type[enum.Enum]:
    """The closed set of reasons: an Enum with a poison member."""
    if not (isinstance(reasons, type) and issubclass(reasons, enum.Enum)) or not len(reasons):
        raise _refused(
            name,
            "drop_reasons= names the closed set of reasons its records may be dropped "
            "for: an Enum class with at least one member (and a 'poison' member for "
            f"records whose steps keep failing); got {reasons!r}.",
            "pipeline-reasons-missing",
        )
    if _poison(reasons) is None:
        raise _refused(
            name,
            f"drop_reasons={reasons.__name__} has no member whose value is 'poison': a "
            "record whose steps keep raising is dropped with it. Add POISON = 'poison'.",
            "pipeline-reasons-missing",
        )
    return reasons


def check_steps(
    name: str, steps: tuple[object, ...], reasons: type[enum.Enum], sources: Mapping[str, Any]
) -> tuple[DropStep | EnrichStep, ...]:
    """Each step is marked, and names only reasons of the set and sources it was given."""
    return tuple(_check_step(name, step, reasons, sources) for step in steps)


def _check_step(
    name: str, step: object, reasons: type[enum.Enum], sources: Mapping[str, Any]
) -> DropStep | EnrichStep:
    if isinstance(step, DropStep):
        outside = sorted(str(r) for r in step.reasons - frozenset(reasons))
        if outside:
            raise _refused(
                name,
                f"drop step {step.name} names {', '.join(outside)}, outside drop_reasons "
                f"({reasons.__name__}).",
                "pipeline-reason-outside-set",
            )
        return step
    if isinstance(step, EnrichStep):
        undeclared = sorted(step.sources - set(sources))
        if undeclared:
            raise _refused(
                name,
                f"enrich step {step.name} reads {', '.join(map(repr, undeclared))}, which "
                "sources= does not declare.",
                "pipeline-source-undeclared",
            )
        return step
    raise _refused(
        name,
        f"step {getattr(step, '__qualname__', step)!r} is marked neither @drop nor @enrich; "
        "mark it with the one it does.",
        "pipeline-step-unmarked",
    )


def check_numbers(
    name: str, batch_size: object, poison_after: object, max_record_bytes: object
) -> None:
    """``batch_size``, ``poison_after`` and ``max_record_bytes``, each within its bounds."""
    given = (batch_size, poison_after, max_record_bytes)
    for (option, low, high), value in zip(NUMBERS, given, strict=True):
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise _refused(name, f"{option}= is a whole number from {low} to {high}.")


def check_parts(
    name: str, *, sink: object, key: object, buffer: object, freshness: object, files: object
) -> None:
    """The functions it calls on each record, and the parts it is made of."""
    for option, value in (("sink", sink), ("key", key)):
        if not callable(value):
            raise _refused(name, f"{option}= must be a function of the record.")
    if not isinstance(buffer, Buffer):
        raise _refused(name, "buffer= is a Buffer(capacity=..., overflow=...).")
    if freshness is not None and not isinstance(freshness, Freshness):
        raise _refused(name, "freshness= is Freshness.bounded(...) or Freshness.advisory(...).")
    if files is not None and not isinstance(files, Files):
        raise _refused(name, "files= is Files(prefix=..., storage=...).")


def check_fields(
    name: str,
    sensitive: tuple[str, ...],
    columns: tuple[str, ...] | None,
    buffer: Buffer,
    reasons: type[enum.Enum],
) -> None:
    """Each sensitive field names a declared column, when the pipeline declares them (a
    dotted name: a field inside that column's value); the buffer's reason is of the set."""
    unknown = [n for n in sensitive if columns and n.partition(".")[0] not in columns]
    if unknown:
        raise _refused(
            name,
            f"sensitive= names {', '.join(map(repr, unknown))}, which columns= does not "
            f"declare ({', '.join(columns or ())}).",
        )
    if buffer.reason is not None and buffer.reason not in frozenset(reasons):
        raise _refused(
            name,
            f"Buffer(reason={buffer.reason!r}) is not a member of drop_reasons "
            f"({reasons.__name__}).",
            "pipeline-reason-outside-set",
        )


def check_name(name: object) -> None:
    """A name its jobs' keys, metrics labels and admin URL may hold."""
    if not isinstance(name, str) or not NAME.match(name):
        raise DeclarationError(
            "A pipeline's name is 1-100 letters, digits or '_.-', such as 'shop.catalog'; got "
            f"{name!r}.",
            code="pipeline-invalid",
        )


def columns(name: str, declared: object) -> tuple[str, ...]:
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


def field_names(name: str, option: str, names: object) -> tuple[str, ...]:
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
