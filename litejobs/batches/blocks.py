"""``litejobs.batch``: open a batch, add children to it, and find the running child's batch.

``with litejobs.batch(on_complete=summary) as b:`` opens an atomic block on litejobs' database
(a savepoint inside the caller's transaction): the batch's record and its callback jobs (held,
``waiting`` until the batch releases them) are written first, every job enqueued inside the
block joins the batch, and the block's end seals it. An error inside the block rolls it all
back: no batch, no child, no callback. The callback job is released by the transaction that
ends the last child (the job table's trigger), with ``batch_id``, ``done``, ``dead`` and
``cancelled`` merged into its arguments; ``on_failure``'s job is released the same way by the
first child that ends dead or cancelled.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

from django.db import connections, transaction

from ..conf import settings
from ..core import clock
from ..exceptions import InvalidInput
from ..jobs.context import running
from ..jobs.declarations import JobDefinition
from ..jobs.enqueue import Enqueued
from ..sql.cursors import fetch_all, fetch_one, run_query
from .errors import BatchInvalid, BatchNotFound

if TYPE_CHECKING:
    from ..models import Batch as BatchRecord

#: The arguments a batch's callbacks are called with (besides any given at ``batch()``).
COUNTS = ("batch_id", "done", "dead", "cancelled")

_OPEN: ContextVar[Batch | None] = ContextVar("litejobs_open_batch", default=None)


def open_batch() -> Batch | None:
    """The batch that enqueues join here (inside ``with batch(...)`` or ``with b:``)."""
    return _OPEN.get()


@dataclass
class Batch:
    """A batch, by id. ``with b:`` makes every enqueue inside the block join it (its own
    atomic block, so a child and its joining commit together); ``b.add(job, **arguments)``
    enqueues one child. A batch whose callback was released refuses children
    (``BatchClosed``)."""

    id: int
    _tokens: list[Token[Batch | None]] = field(default_factory=list, repr=False, compare=False)

    def add(self, job: JobDefinition, /, **arguments: Any) -> Enqueued:
        """Enqueue one run of ``job`` as a child of this batch."""
        with self:
            return job.enqueue(**arguments)

    def record(self) -> BatchRecord:
        """The batch's record as it is now (its counts, its callbacks)."""
        from ..models import Batch as BatchRecord

        return BatchRecord.objects.using(settings.DATABASE).get(pk=self.id)

    def __enter__(self) -> Batch:
        self._tokens.append(_OPEN.set(self))
        return self

    def __exit__(self, *exc: object) -> None:
        _OPEN.reset(self._tokens.pop())


class BatchBlock:
    """The block ``litejobs.batch(...)`` answers: entering it opens the batch (answering its
    ``Batch``), leaving it seals the batch, or rolls it back on an error."""

    def __init__(
        self,
        on_complete: JobDefinition | None,
        on_failure: JobDefinition | None,
        label: str,
        arguments: Mapping[str, Any],
    ) -> None:
        self._callbacks = {"on_complete": on_complete, "on_failure": on_failure}
        for role, callback in self._callbacks.items():
            if callback is not None:
                _check_callback(role, callback, arguments)
        self._label = str(label)[:200]
        self._arguments = dict(arguments)
        self._atomic = transaction.atomic(using=settings.DATABASE)
        self._batch: Batch | None = None

    def __enter__(self) -> Batch:
        self._atomic.__enter__()
        try:
            self._batch = Batch(self._create())
        except BaseException as error:
            self._atomic.__exit__(type(error), error, error.__traceback__)
            raise
        return self._batch.__enter__()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._batch is None:
            return
        self._batch.__exit__()
        if exc is None:
            try:
                seal(self._batch.id)
            except BaseException as error:
                self._atomic.__exit__(type(error), error, error.__traceback__)
                raise
        self._atomic.__exit__(exc_type, exc, tb)

    def _create(self) -> int:
        """The batch's record and its held callback jobs; answers its id."""
        from ..models import Batch as BatchRecord

        names = {
            role: callback.name if callback else "" for role, callback in self._callbacks.items()
        }
        record = BatchRecord.objects.using(settings.DATABASE).create(
            label=self._label, created_at=clock.now(), **names
        )
        held: dict[str, int] = {}
        token = _OPEN.set(None)  # a callback never joins a batch open around this one
        try:
            for role, callback in self._callbacks.items():
                if callback is not None:
                    held[f"{role}_job_id"] = _held_callback(
                        role, callback, record.pk, self._arguments
                    )
        finally:
            _OPEN.reset(token)
        _hold(list(held.values()))
        if held:
            BatchRecord.objects.using(settings.DATABASE).filter(pk=record.pk).update(**held)
        return int(record.pk)


def _check_callback(role: str, callback: Any, arguments: Mapping[str, Any]) -> None:
    """Refuse a callback that is no declared job, or one that does not take the counts."""
    if not isinstance(callback, JobDefinition):
        raise BatchInvalid(
            f"{role}= takes a declared @job (the job called when the batch ends); got "
            f"{callback!r}.",
            code="batch-callback-invalid",
        )
    try:
        callback.prepare({**arguments, **dict.fromkeys(COUNTS, 0)})
    except InvalidInput as error:
        raise BatchInvalid(
            f"{role}={callback.name!r} must take the keyword arguments {', '.join(COUNTS)} "
            f"(and the arguments given to batch()): {error.args[0]}",
            code="batch-callback-invalid",
        ) from error


def _held_callback(
    role: str, callback: JobDefinition, batch_id: int, arguments: Mapping[str, Any]
) -> int:
    """Insert one callback job (its counts 0 until it is released); answers its id."""
    enqueued = callback.enqueue(**{**arguments, **dict.fromkeys(COUNTS, 0), "batch_id": batch_id})
    if enqueued.deduped:
        raise BatchInvalid(
            f"{role}={callback.name!r}: live job {enqueued.id} already holds the key this "
            "batch's callback would have; give the callback a key that includes batch_id.",
            code="batch-callback-taken",
        )
    return enqueued.id


def _hold(ids: list[int]) -> None:
    """Hold the callback jobs until the batch releases them."""
    from ..models.batches import WAITING_FOR_OTHERS

    if not ids:
        return
    with connections[settings.DATABASE].cursor() as cursor:
        run_query(cursor, "batch_hold", {"ids": ids, "held": WAITING_FOR_OTHERS})
        fetch_all(cursor)


def seal(batch_id: int) -> str:
    """The block that opened ``batch_id`` ended: answers ``completed`` when no child was
    left (the callback released now), else ``open``."""
    with connections[settings.DATABASE].cursor() as cursor:
        run_query(cursor, "batch_seal", {"batch": batch_id, "now": clock.now()})
        found = fetch_one(cursor)
    return str(found["state"]) if found else ""


class BatchOpener:
    """``litejobs.batch``: call it to open a batch; ``current()`` and ``get(id)`` find one."""

    def __call__(
        self,
        *,
        on_complete: JobDefinition | None = None,
        on_failure: JobDefinition | None = None,
        label: str = "",
        arguments: Mapping[str, Any] | None = None,
    ) -> BatchBlock:
        """A block whose enqueues join a new batch: ``on_complete``'s job is enqueued once,
        when every child has ended, ``on_failure``'s once, when the first child ends dead or
        cancelled; each called with ``batch_id``, ``done``, ``dead``, ``cancelled`` and
        ``arguments``."""
        return BatchBlock(on_complete, on_failure, label, arguments or {})

    def current(self) -> Batch | None:
        """The batch open here (inside a batch block), else the running job's batch (called
        from a child's body), else ``None``."""
        found = open_batch()
        if found is not None:
            return found
        ctx = running()
        if ctx is None:
            return None
        from ..models import Job

        batch_id = (
            Job.objects.using(settings.DATABASE)
            .filter(pk=ctx.job_id)
            .values_list("batch_id", flat=True)
            .first()
        )
        return Batch(batch_id) if batch_id else None

    def get(self, batch_id: int) -> Batch:
        """The batch ``batch_id`` (``BatchNotFound`` when there is none)."""
        from ..models import Batch as BatchRecord

        if not BatchRecord.objects.using(settings.DATABASE).filter(pk=batch_id).exists():
            raise BatchNotFound(f"No batch has id {batch_id}.", code="batch-unknown")
        return Batch(int(batch_id))


#: ``with litejobs.batch(on_complete=...) as b:``; ``litejobs.batch.current()``.
batch = BatchOpener()
