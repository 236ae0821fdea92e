"""``pipeline()``'s options checked, in named groups in the order it reports problems: its
name, its closed set of drop reasons, its steps (each marked, naming only reasons of the set
and sources it was given), its numbers, its parts and its fields. Each refusal is a
``DeclarationError`` whose code names the rule."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from typing import Any

from ..exceptions import DeclarationError
from .declarations import Buffer, DropStep, EnrichStep, Files, Freshness, poison_of

#: A pipeline's name: its jobs' keys, concurrency keys, metrics labels and admin URL hold it.
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
#: The bounds of a pipeline's numbers, in the order they are checked.
NUMBERS = (("batch_size", 1, 10_000), ("poison_after", 1, 100), ("max_record_bytes", 64, 1 << 30))


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
    if poison_of(reasons) is None:
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
