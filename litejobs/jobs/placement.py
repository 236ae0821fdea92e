"""Where a job is placed as it is enqueued: the batch it joins, the jobs it waits on.

The job queue knows neither batches nor dependencies (``litejobs.batches`` builds on it): that
feature registers its ``Placer`` when it loads, and an enqueue hands the placer its insert when
the call names ``depends_on`` or a batch is open. A plain enqueue asks it one question
(``active``), answered from a context variable.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from .enqueue import Enqueued


@dataclass(frozen=True)
class Placing:
    """What an enqueue asked of its placement: the jobs it waits on (as given, checked by the
    placer), what it does when one of them did not succeed, and when it asked to run."""

    depends_on: Any
    on_upstream_failure: str | None
    run_at: datetime


class Placer(Protocol):
    """What places enqueued jobs (``litejobs.batches``)."""

    def active(self) -> bool:
        """Whether enqueues now join something (a batch is open here)."""

    def place(
        self, insert: Callable[[], Sequence[Enqueued]], placing: Placing
    ) -> Sequence[Enqueued]:
        """Run ``insert`` and place what it answers, in one transaction."""


_placers: list[Placer] = []


def register(placer: Placer) -> None:
    """Make ``placer`` the one enqueues hand their inserts to (a feature's load)."""
    _placers[:] = [placer]


def placer_for(depends_on: Any = None, on_upstream_failure: str | None = None) -> Placer | None:
    """The placer an enqueue hands its insert to, or ``None`` for a plain insert."""
    if not _placers:
        return None
    placer = _placers[0]
    if depends_on is None and on_upstream_failure is None and not placer.active():
        return None
    return placer
