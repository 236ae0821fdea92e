"""``pipeline()``: declare a pipeline in an app's ``pipelines.py``; the ``Pipeline`` it
answers is how code feeds it, imports files through it, reads its counts and replays it.

```python
class Reason(enum.Enum):
    DISCONTINUED = "discontinued"; POISON = "poison"; OVERFLOW = "overflow"

@drop(reasons={Reason.DISCONTINUED})
def parse(record): ...                       # a member of its reasons (dropped) or None

@enrich(sources={"rates"})
def price_in_eur(record, sources): ...       # the enriched record

catalog = pipeline("shop.catalog", steps=[parse, price_in_eur], drop_reasons=Reason,
                   sources={"rates": RATES}, key=lambda r: r["sku"], columns=["sku", "price"],
                   sink=save_product, buffer=Buffer(capacity=100_000, overflow="block"),
                   files=Files(prefix="feeds/catalog/"))
catalog.feed(records)                        # inside the caller's transaction
catalog.import_file("feeds/catalog/2026-06.csv")  # one of its files=; a worker runs it
catalog.stats()   # {"accepted": n, "dropped": {"discontinued": n, ...}, "errored": n}

@catalog.consumer("vendor-a")                # a pull source, paged from a stored position
def fetch_vendor_a(position):
    page = vendor_a.changes(since=position)
    return page.records, page.next_position  # no records: caught up
catalog.consume("vendor-a")                  # a worker fetches and feeds, batch by batch
catalog.position("vendor-a")                 # where it stands (None before its first batch)
```
"""

from __future__ import annotations

import enum
import inspect
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..core.errors import DeclarationError
from ..core.spelling import unknown_option
from ..jobs.enqueue import Enqueued
from . import buffer, declarations, options
from . import consumers as consuming
from . import stats as counting
from .declarations import Buffer, Declaration, DropStep, EnrichStep, Files, Freshness

if TYPE_CHECKING:
    from ..models import ImportRun

__all__ = ["Pipeline", "pipeline"]


class Pipeline(Declaration):
    """A declared pipeline (see ``pipeline()``)."""

    def __repr__(self) -> str:
        return f"<Pipeline {self.name}>"

    def feed(self, records: Iterable[Mapping[str, Any]]) -> int:
        """Buffer ``records`` (dicts) inside the caller's transaction; the drain job takes
        them once it commits. Answers how many were buffered. Past the buffer's capacity its
        overflow applies (``ingest-buffer-full`` when it blocks in vain)."""
        return buffer.feed(self, records)

    def import_file(self, name: str, *, format: str = "csv") -> ImportRun:
        """Import the file ``name`` (a relative name in the storage of ``files=``, under its
        folder; ``format="csv"`` with the declared columns as its header, or ``"ndjson"``);
        a worker runs it, resumable from its last page. Answers the ``ImportRun`` that shows
        its progress and error report."""
        # Imported here: imports reads the records, which load only once Django is ready,
        # and this module is part of ``import litejobs``.
        from . import imports

        return imports.import_file(self, name, format=format)

    def stats(self) -> dict[str, Any]:
        """``{"accepted": n, "dropped": {reason: n}, "errored": n}`` since it began."""
        return counting.stats(self)

    def replay(self, reason: Any) -> int:
        """Feed the set-aside records dropped for ``reason`` (or ``"errored"``) back, after
        a fix; answers how many."""
        return buffer.replay(self, reason)

    def consumer(self, key: str) -> Callable[[Callable[[Any], Any]], consuming.Consumer]:
        """Declare ``fetch(position) -> (records, next_position)`` as this pipeline's consumer
        ``key`` (1-100 letters, digits or ``_.-``), in the app's ``pipelines.py``.
        ``position`` is the JSON value stored after the last batch (None before the first); no
        records means caught up. Each batch's records are fed, and ``next_position`` stored, in
        one transaction."""
        return consuming.declare(self, key)

    def consume(self, key: str) -> Enqueued:
        """Enqueue a run of the consumer ``key`` in the caller's transaction: it fetches and
        feeds batches until the source is caught up. One run per key at a time; a call while
        one runs enqueues the next behind it. Schedule a job that calls this to poll."""
        return consuming.request(consuming.find(self.name, key))

    def position(self, key: str) -> Any:
        """The position the consumer ``key`` stored after its last batch (None before one)."""
        return consuming.position(consuming.find(self.name, key)).value


def pipeline(
    name: str,
    *,
    steps: Iterable[DropStep | EnrichStep],
    drop_reasons: type[enum.Enum],
    sink: Callable[[dict[str, Any]], Any],
    key: Callable[[Mapping[str, Any]], Any],
    sources: Mapping[str, Any] | None = None,
    columns: Iterable[str] | None = None,
    buffer: Buffer | None = None,
    batch_size: int = 200,
    freshness: Freshness | None = None,
    poison_after: int = 3,
    max_record_bytes: int = 1_048_576,
    files: Files | None = None,
    sensitive: Iterable[str] = (),
    **unknown: Any,
) -> Pipeline:
    """Declare a pipeline: ``steps`` run in the order listed (each ``@drop`` or
    ``@enrich``), ``drop_reasons`` is the closed set (an Enum with a ``"poison"`` member)
    every dropped record carries one reason of, ``sink(record)`` writes a kept record
    (idempotently, by ``key(record)``). ``files=Files(prefix=..., storage=...)`` says where
    its file imports may read; ``sensitive=`` names the fields whose values its set-aside
    records never show. A declaration that breaks a rule is refused with a
    ``DeclarationError`` naming it; ``manage.py check`` reports it."""
    if unknown:
        raise unknown_option(f"Pipeline {name!r}", next(iter(unknown)), OPTIONS, "pipeline()")
    if sources is not None and not isinstance(sources, Mapping):
        raise DeclarationError(
            f"Pipeline {name!r}: sources= is a dict of source name to value, such as "
            f"{{'rates': RATES}}; got a {type(sources).__name__}.",
            code="pipeline-invalid",
        )
    listed = tuple(steps) if isinstance(steps, list | tuple) else _not_listed(name)
    fields = None if columns is None else options.columns(name, columns)
    hidden = options.field_names(name, "sensitive", sensitive)
    options.check_name(name)
    reasons = options.check_reasons(name, drop_reasons)
    given = dict(sources or {})
    marked = options.check_steps(name, listed, reasons, given)
    options.check_numbers(name, batch_size, poison_after, max_record_bytes)
    buffer = Buffer() if buffer is None else buffer
    options.check_parts(name, sink=sink, key=key, buffer=buffer, freshness=freshness, files=files)
    options.check_fields(name, hidden, fields, buffer, reasons)
    declared = Pipeline(
        name=name,
        steps=marked,
        drop_reasons=reasons,
        sink=sink,
        key=key,
        sources=given,
        columns=fields,
        buffer=buffer,
        batch_size=batch_size,
        freshness=freshness,
        poison_after=poison_after,
        max_record_bytes=max_record_bytes,
        files=files,
        sensitive=hidden,
        module=str(_caller().get("__name__", "")),
        namespace=_caller(),
    )
    return declarations.register(declared)


#: The options ``pipeline()`` takes beside its name.
OPTIONS = tuple(inspect.signature(pipeline).parameters)[1:-1]


def _not_listed(name: str) -> tuple[Any, ...]:
    raise DeclarationError(
        f"Pipeline {name!r}: steps= lists the steps in the order they run, such as "
        "steps=[drop_duplicates, enrich_prices].",
        code="pipeline-invalid",
    )


def _caller() -> dict[str, Any]:
    """The globals of the module that called ``pipeline()``."""
    return sys._getframe(2).f_globals
