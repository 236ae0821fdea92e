"""litejobs' features and what each contributes to the parts that serve them all.

A feature is a package (``jobs``, ``scheduling``, ``outbox``, ``reports`` ...) whose
``feature.py`` holds ``feature``, a ``Feature``: its problems for ``doctor`` and their runbook
sections, its metric families, its housekeeping purges, the dashboard's words for its problems,
the module of its ``manage.py litejobs`` verbs and of its admin pages, and what it imports
from every installed app (``autodiscover``). Importing ``feature.py`` imports what registers
itself too (the feature's checks, its own jobs and schedules).

litejobs' app loads the features when Django is ready (``load``, in the order its app
config lists them); ``doctor``, the metrics collector, the housekeeping job, the
dashboard and ``manage.py litejobs`` read ``installed()`` instead of importing each feature.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from importlib import import_module
from typing import Any, Protocol

from django.db.models import Count, QuerySet

from .diagnostics import Problem
from .remedies import Words


@dataclass(frozen=True)
class Checkup:
    """What a feature's problems are judged against: the time, the database's time (leases
    are judged on it, as the workers judge them) and how long due work may wait."""

    now: datetime
    lease_now: datetime
    max_ready_age: timedelta


@dataclass(frozen=True)
class Family:
    """One metric family as a feature reads it, for the metrics add-on to serve: a gauge, or
    with ``counter`` a counter (``name`` then without its ``_total``). ``samples`` are
    (label values in the order of ``labels``, value)."""

    name: str
    help: str
    labels: tuple[str, ...] = ()
    samples: list[tuple[tuple[str, ...], float]] = field(default_factory=list)
    counter: bool = False

    def add(self, labels: Iterable[str], value: float) -> None:
        """One more sample."""
        self.samples.append((tuple(labels), value))

    def add_counts(self, rows: QuerySet[Any], *fields: str) -> None:
        """One sample per group of ``rows`` by ``fields`` (the label values): its count."""
        for *labels, count in rows.order_by().values_list(*fields).annotate(n=Count("pk")):
            self.add(labels, count)


def gauges(labels: tuple[str, ...], *described: tuple[str, str]) -> list[Family]:
    """Gauges of the same ``labels``, one per (name, help) of ``described``."""
    return [Family(name, text, labels) for name, text in described]


class Purge(Protocol):
    """A housekeeping step: delete what is past its retention, in bounded batches, until done
    or ``should_stop()``; answers the counts by name. ``by`` is who asked (the action log)."""

    def __call__(self, *, by: str, should_stop: Callable[[], bool]) -> Mapping[str, int]: ...


@dataclass(frozen=True)
class Feature:
    """What one feature contributes; each part is optional."""

    name: str
    #: What ``doctor`` (and the dashboard) reports about it, in the order it is reported.
    problems: Callable[[Checkup], Iterable[Problem]] | None = None
    #: Each code of ``problems`` -> its section's anchor in docs/operating/runbooks.md.
    runbooks: Mapping[str, str] = field(default_factory=dict)
    #: Its metric families, read at every scrape (the time of the scrape given).
    metrics: Callable[[datetime], Iterable[Family]] | None = None
    #: The daily housekeeping's steps, by the name their counts are answered under.
    purges: Mapping[str, Purge] = field(default_factory=dict)
    #: The dashboard's words and actions for each code of ``problems``.
    words: Mapping[str, Words] = field(default_factory=dict)
    #: The module whose ``register(subparsers)`` adds its ``manage.py litejobs`` verbs
    #: (imported by that command only).
    verbs: str = ""
    #: The module registering its admin pages (imported when Django's admin is installed).
    admin: str = ""
    #: Imports what every installed app declares for it (``pipelines.py`` ...), after the
    #: features before it did.
    autodiscover: Callable[[], None] | None = None


_installed: list[Feature] = []


def load(packages: Iterable[str], *, admin: bool) -> None:
    """Keep the ``feature`` of each package's ``feature.py``, in order; then (with ``admin``)
    import their admin modules, and run their autodiscovery in the same order."""
    found = [import_module(f"{package}.feature").feature for package in packages]
    _installed[:] = found
    for feature in found:
        if admin and feature.admin:
            import_module(feature.admin)
    for feature in found:
        if feature.autodiscover is not None:
            feature.autodiscover()


def installed() -> tuple[Feature, ...]:
    """The features litejobs' app loaded, in its order."""
    return tuple(_installed)
