"""A job's hold-up: for every job that has not started (neither running nor finished), what
keeps the claim from taking it, read from the same conditions the claim statements read.

The claim (``litejobs/sql/jobs.sql``: ``claim``, ``claim_limited``) takes a job when its state
is claimable, its ``run_at`` has passed, its queue is not paused (``QueueState``), a live worker
serves its queue, the worker does not leave it to others (a job it handed back), and, for a
concurrency-limited job, its key has a free slot, and, for a rate-limited job, its rate key
has a start left in the window; a job held for an operator (a ``once=True``
step whose outcome is unknown) waits for ``resolve-step`` before all of those. ``holdups_of``
answers the first of those that holds a job back, or where it stands in line when none does
(and whether a worker thread is free to take it), for one job (its page, ``show``) or a page of
them (the listing's column) in at most six statements whatever the page's size.

A hold-up is a ``HoldUp``: a stable ``code`` (``HoldUpCode``; new kinds, such as a rate limit
or a dependency on another job, become new members), a sentence for people, and the structured
values behind it (``as_json``). Pages and ``show`` call it why the job waits ("waiting
because"); the ``waiting`` state is one of its kinds (``step-waiting``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from django.db import connections
from django.db.models import Q
from django.db.models.functions import Now
from django.utils.translation import ngettext

from ..conf import settings
from ..core import clock, times
from ..core.durations import format_duration
from ..core.enums import CLAIMABLE, JobState, StepState
from ..exceptions import UnknownJob
from ..models import Job, JobStep, QueueState, RateBucket, Worker
from ..sql.cursors import run_query
from . import catalog
from .ratelimits import Window
from .steps import HELD

#: Jobs ahead of one in line are counted up to this many ("more than 1,000").
AHEAD_CAP = 1000
#: A worker row whose queues hold this serves every queue (as an empty list does).
EVERY_QUEUE = "*"
#: The columns ``holdups_of`` reads of a job (the listing reads no more than these).
READ_FIELDS = (
    "id",
    "state",
    "queue",
    "run_at",
    "priority",
    "attempts",
    "max_attempts",
    "concurrency_key",
    "concurrency_limit",
    "rate_key",
    "rate_limit",
    "rate_per",
    "handed_back_at",
    "lease_owner",
    "error_class",
)


class HoldUpCode(StrEnum):
    """Why a job that has not started has not run yet (a closed set that grows: each new kind
    of hold-up is a new member)."""

    HELD_FOR_OPERATOR = "held-for-operator"
    QUEUE_PAUSED = "queue-paused"
    HANDED_BACK = "handed-back"
    RETRY_PENDING = "retry-pending"
    STEP_WAITING = "step-waiting"
    DEBOUNCED = "debounced"
    NOT_DUE = "not-due"
    NO_WORKER = "no-worker"
    CONCURRENCY_FULL = "concurrency-full"
    RATE_LIMITED = "rate-limited"
    NEXT_IN_LINE = "next-in-line"
    WAITING_FOR_DEPENDENCIES = "waiting-for-dependencies"
    BATCH_CALLBACK = "batch-callback"


@dataclass(frozen=True)
class HoldUp:
    """What holds one job up: ``code`` for programs, ``message`` for people, and the values the
    message is made of (``None`` or empty where they do not apply)."""

    code: HoldUpCode
    message: str
    queue: str
    #: A few words for a listing's column (the message says the rest).
    summary: str = ""
    #: When the wait ends by itself (its run_at), if it does.
    until: datetime | None = None
    #: The attempt that failed last (a retry pending), or the attempts started so far.
    attempt: int | None = None
    max_attempts: int | None = None
    concurrency_key: str | None = None
    concurrency_limit: int | None = None
    #: The running jobs holding its concurrency key's slots.
    holders: tuple[int, ...] = ()
    #: Its rate's bucket and limit, and the starts left in the window now (rate-limited).
    rate_key: str | None = None
    rate_limit: int | None = None
    starts_left: int | None = None
    paused_by: str = ""
    reason: str = ""
    paused_at: datetime | None = None
    #: When a worker first handed it back, and which worker handed it back last.
    handed_back_at: datetime | None = None
    handed_back_by: str = ""
    #: Due jobs the claim takes before it (capped at ``AHEAD_CAP``).
    ahead: int | None = None
    #: Worker threads free to take it now, of the live workers serving its queue (``None``:
    #: not asked, the job is held back by something else).
    free_threads: int | None = None
    #: The steps whose outcome an operator must settle, and the command that does it.
    steps: tuple[str, ...] = ()
    action: str = ""
    #: The jobs it waits on that have not ended, each with its state (``depends_on``).
    upstream: tuple[tuple[int, str], ...] = ()
    #: The batch whose callback it is, and that batch's children not ended yet.
    batch: int | None = None
    children_left: int | None = None

    def as_json(self) -> dict[str, Any]:
        """The reason as plain JSON values (instants as ISO 8601, holders and steps as lists)."""
        data = asdict(self)
        data["code"] = self.code.value
        data["holders"] = list(self.holders)
        data["steps"] = list(self.steps)
        data["upstream"] = [{"id": job_id, "state": state} for job_id, state in self.upstream]
        for name in ("until", "paused_at", "handed_back_at"):
            data[name] = clock.iso(data[name])
        return data


@dataclass(frozen=True)
class LiveWorker:
    """A live worker as the claim sees it: the queues it serves (``None``: every queue) and
    its threads not running a job (as of its last heartbeat)."""

    queues: frozenset[str] | None
    free: int

    def serves(self, queue: str) -> bool:
        """Whether it claims jobs of ``queue``."""
        return self.queues is None or queue in self.queues


@dataclass(frozen=True)
class Conditions:
    """What the claim reads besides the job itself, for the jobs of one page."""

    now: datetime
    paused: dict[str, QueueState]
    workers: tuple[LiveWorker, ...]
    #: Concurrency key -> the ids of the running jobs holding its slots.
    holders: dict[str, tuple[int, ...]]
    #: Job id -> its steps whose outcome is unknown (jobs held for an operator).
    unknown_steps: dict[int, tuple[str, ...]] = field(default_factory=dict)
    #: Rate key -> its bucket's (starts, counts), as the claim recorded them.
    rate_starts: dict[str, tuple[list[datetime], list[int]]] = field(default_factory=dict)

    def serves(self, queue: str) -> bool:
        """Whether some live worker claims jobs of ``queue``."""
        return any(worker.serves(queue) for worker in self.workers)

    def free_threads(self, queue: str) -> int:
        """Threads free to take a job of ``queue`` now, over the live workers serving it."""
        return sum(worker.free for worker in self.workers if worker.serves(queue))


def not_started(job: Job) -> bool:
    """Has this job not run yet (neither running nor finished)?"""
    return job.state in CLAIMABLE


def is_held(job: Job) -> bool:
    """Is this job held for an operator (a ``once=True`` step's outcome is unknown)?"""
    return job.state == JobState.WAITING and job.run_at >= HELD


#: What features hold jobs back for (a job waiting on others, a batch's callback): each reads
#: the jobs of a page and answers the hold-ups of those it holds, in a statement or two when
#: one of them is its own and none otherwise. Asked before the claim's own conditions.
READERS: list[Callable[[Sequence[Job], datetime], dict[int, HoldUp]]] = []


def holdup_of(job: Job, *, now: datetime | None = None) -> HoldUp | None:
    """What holds ``job`` up, or ``None`` when it is running or finished."""
    return holdups_of([job], now=now).get(job.pk)


def holdups_of(jobs: Iterable[Job], *, now: datetime | None = None) -> dict[int, HoldUp]:
    """Job id -> its hold-up, for each of ``jobs`` that has not started, in at most six
    statements whatever their number (none when every job has started), plus the few of a
    feature's ``READERS`` when it holds one of them."""
    unstarted = [job for job in jobs if not_started(job)]
    if not unstarted:
        return {}
    conditions = read_conditions(unstarted, now=now or clock.now())
    found: dict[int, HoldUp] = {}
    for reader in READERS:
        found.update(reader(unstarted, conditions.now))
    in_line: list[Job] = []
    for job in (job for job in unstarted if job.pk not in found):
        blocked = held_back(job, conditions)
        if blocked is None:
            in_line.append(job)
        else:
            found[job.pk] = blocked
    ahead = jobs_ahead(in_line, conditions.now)
    for job in in_line:
        found[job.pk] = next_in_line(job, ahead.get(job.pk, 0), conditions)
    return found


# What the claim reads ----------------------------------------------------------------------


def _alias() -> str:
    return settings.DATABASE


def read_conditions(jobs: Sequence[Job], *, now: datetime) -> Conditions:
    """The queue switches, live workers, concurrency holders and unknown steps that bear on
    ``jobs``."""
    queues = {job.queue for job in jobs}
    paused = {
        switch.name: switch
        for switch in QueueState.objects.using(_alias()).filter(paused=True, name__in=queues)
    }
    return Conditions(
        now=now,
        paused=paused,
        workers=live_workers(),
        holders=_holders(jobs, now),
        unknown_steps=_unknown_steps(jobs),
        rate_starts=_rate_starts(jobs, now),
    )


def live_workers() -> tuple[LiveWorker, ...]:
    """The live workers (lease not lapsed, not stopping; leases on the claim's clock)."""
    lease_now = clock.lease_instant() or Now()
    live = (
        Worker.objects.using(_alias())
        .filter(lease_expires_at__gt=lease_now, stopping=False)
        .values_list("queues", "concurrency", "in_flight")
    )
    return tuple(
        LiveWorker(
            None if not queues or EVERY_QUEUE in queues else frozenset(queues),
            max(0, concurrency - len(in_flight or ())),
        )
        for queues, concurrency, in_flight in live
    )


def _unknown_steps(jobs: Sequence[Job]) -> dict[int, tuple[str, ...]]:
    """The steps of the held ``jobs`` whose outcome is unknown (one statement, none when no
    job is held)."""
    held = [job.pk for job in jobs if is_held(job)]
    return unknown_steps(held) if held else {}


def unknown_steps(held: Sequence[int]) -> dict[int, tuple[str, ...]]:
    """Job id -> its steps whose outcome is unknown, of the jobs ``held`` (one statement)."""
    found: dict[int, list[str]] = {}
    steps = (
        JobStep.objects.using(_alias())
        .filter(job_id__in=list(held), state=StepState.UNKNOWN)
        .order_by("job_id", "id")
        .values_list("job_id", "name")
    )
    for job_id, name in steps:
        found.setdefault(job_id, []).append(name)
    return {job_id: tuple(names) for job_id, names in found.items()}


def _holders(jobs: Sequence[Job], now: datetime) -> dict[str, tuple[int, ...]]:
    """The running jobs of the concurrency keys of the due limited ``jobs`` (one statement,
    none when no such job is asked about)."""
    keys = {job.concurrency_key for job in jobs if job.concurrency_key and job.run_at <= now}
    if not keys:
        return {}
    held: dict[str, list[int]] = {}
    running = (
        Job.objects.using(_alias())
        .filter(Q(state=JobState.RUNNING) & Q(concurrency_key__in=keys))
        .order_by("id")
        .values_list("concurrency_key", "id")
    )
    for key, job_id in running:
        held.setdefault(str(key), []).append(job_id)
    return {key: tuple(ids) for key, ids in held.items()}


def _rate_starts(jobs: Sequence[Job], now: datetime) -> dict[str, tuple[list[datetime], list[int]]]:
    """The counted starts of the rate keys of the due rate-limited ``jobs`` (one statement,
    none when no such job is asked about)."""
    keys = {job.rate_key for job in jobs if job.rate_key and job.run_at <= now}
    if not keys:
        return {}
    buckets = (
        RateBucket.objects.using(_alias())
        .filter(key__in=keys)
        .values_list("key", "starts", "counts")
    )
    return {key: (starts, counts) for key, starts, counts in buckets}


def jobs_ahead(jobs: Sequence[Job], now: datetime) -> dict[int, int]:
    """Job id -> how many due jobs the claim takes before it (one statement for all)."""
    if not jobs:
        return {}
    params: dict[str, Any] = {
        "now": now,
        "cap": AHEAD_CAP,
        "ids": [job.pk for job in jobs],
        "queues": [job.queue for job in jobs],
        "keys": [job.concurrency_key for job in jobs],
        "priorities": [job.priority for job in jobs],
        "run_ats": [job.run_at for job in jobs],
    }
    with connections[_alias()].cursor() as cursor:
        run_query(cursor, "jobs_ahead", params)
        return dict(cursor.fetchall())


# The reasons -------------------------------------------------------------------------------


def when(instant: datetime, now: datetime) -> str:
    """An instant as every litejobs page writes it (``litejobs.core.times``: to the second,
    with its zone), with how far it is from now: ``13:00:05 UTC (in 5m)``."""
    return f"{times.when(instant, now)} ({times.ago(instant, now)})"


def held_back(job: Job, conditions: Conditions) -> HoldUp | None:
    """The first condition of the claim that holds ``job`` back, or ``None`` when it only
    waits for its turn."""
    for check in (_held, _paused, _handed_back, _not_due, _no_worker, _key_full, _rate_full):
        found = check(job, conditions)
        if found is not None:
            return found
    return None


def resolve_command(job_id: int, step: str) -> str:
    """The command that settles a held job's step (``--ran`` or ``--not-ran``)."""
    return f"manage.py litejobs resolve-step {job_id} {step} --ran|--not-ran"


def _held(job: Job, conditions: Conditions) -> HoldUp | None:
    if not is_held(job):
        return None
    steps = conditions.unknown_steps.get(job.pk, ())
    named = ", ".join(repr(step) for step in steps) or "a once=True step"
    action = resolve_command(job.pk, steps[0] if steps else "STEP")
    return HoldUp(
        HoldUpCode.HELD_FOR_OPERATOR,
        f"Held for an operator: step {named} (once=True) was started but its outcome was "
        "never recorded (its worker stopped mid-step), so it is not run again blindly. Check "
        f"whether it took effect, then run `{action.replace('--ran|--not-ran', '--ran')}` (or "
        "`--not-ran`): the job is due at once.",
        job.queue,
        summary=f"Held for an operator: step {named}, outcome unknown",
        steps=steps,
        action=action,
    )


def _paused(job: Job, conditions: Conditions) -> HoldUp | None:
    switch = conditions.paused.get(job.queue)
    if switch is None:
        return None
    who = switch.changed_by or "someone"
    why = switch.reason or "no reason given"
    return HoldUp(
        HoldUpCode.QUEUE_PAUSED,
        f"Its queue {job.queue!r} is paused: {who} paused it at "
        f"{when(switch.changed_at, conditions.now)} ({why}). Resume the queue to run it.",
        job.queue,
        summary=f"Queue paused by {who}: {why}",
        paused_by=switch.changed_by,
        reason=switch.reason,
        paused_at=switch.changed_at,
    )


def _handed_back(job: Job, conditions: Conditions) -> HoldUp | None:
    if job.handed_back_at is None or job.state != JobState.SCHEDULED:
        return None
    grace = settings.duration_or_default("UNKNOWN_JOB_GRACE")
    seen_by = f"worker {job.lease_owner}" if job.lease_owner else "a worker"
    at = when(job.run_at, conditions.now)
    if job.run_at > conditions.now:
        again = f"It is due again at {at}"
    else:
        again = f"Due again since {at}: the next claim of a worker that can run it takes it"
    return HoldUp(
        HoldUpCode.HANDED_BACK,
        f"Handed back as unknown: {seen_by} could not run it (its release does not declare "
        f"this job or this payload version) and left it to a worker that can. {again}; it "
        f"goes dead if no such worker takes it by "
        f"{when(job.handed_back_at + grace, conditions.now)} ({format_duration(grace)} after "
        f"the first hand-back, at {when(job.handed_back_at, conditions.now)}). Deploy the "
        "release that declares it to every worker.",
        job.queue,
        summary=f"Handed back as unknown by {seen_by}",
        until=job.run_at,
        handed_back_at=job.handed_back_at,
        handed_back_by=job.lease_owner,
    )


def _not_due(job: Job, conditions: Conditions) -> HoldUp | None:
    if job.run_at <= conditions.now:
        return None
    at = when(job.run_at, conditions.now)
    if job.state == JobState.FAILED:
        error = f" ({job.error_class})" if job.error_class else ""
        return HoldUp(
            HoldUpCode.RETRY_PENDING,
            f"Waiting for its retry at {at}: attempt {job.attempts} of {job.max_attempts} "
            f"failed{error}.",
            job.queue,
            summary=f"Retry at {at} after attempt {job.attempts}",
            until=job.run_at,
            attempt=job.attempts,
            max_attempts=job.max_attempts,
        )
    if job.state == JobState.WAITING:
        return HoldUp(
            HoldUpCode.STEP_WAITING,
            f"Waiting in a step (a sleep or an event) until {at} at the latest.",
            job.queue,
            summary=f"In a step until {at}",
            until=job.run_at,
        )
    quiet = _debounce_of(job.name)
    if quiet is not None and job.state == JobState.SCHEDULED:
        return HoldUp(
            HoldUpCode.DEBOUNCED,
            f"Debounced: due at {at}, {format_duration(quiet)} after the last enqueue of its "
            "key; another enqueue of the key before then moves it later, with its arguments.",
            job.queue,
            summary=f"Debounced until {at}",
            until=job.run_at,
        )
    return HoldUp(
        HoldUpCode.NOT_DUE,
        f"Not due until {at}.",
        job.queue,
        summary=f"Not due until {at}",
        until=job.run_at,
    )


def _debounce_of(name: str) -> timedelta | None:
    """The quiet period the job's declaration debounces it by, if it declares one here."""
    try:
        definition = catalog.get(name)
    except UnknownJob:
        return None
    return getattr(definition, "debounce", None)


def _no_worker(job: Job, conditions: Conditions) -> HoldUp | None:
    if conditions.serves(job.queue):
        return None
    return HoldUp(
        HoldUpCode.NO_WORKER,
        f"No live worker serves its queue {job.queue!r}. Start `manage.py runworker` (every "
        f"queue) or `runworker --queues {job.queue}`.",
        job.queue,
        summary=f"No live worker serves queue {job.queue!r}",
    )


def _key_full(job: Job, conditions: Conditions) -> HoldUp | None:
    key, limit = job.concurrency_key, job.concurrency_limit
    if not key or limit is None:
        return None
    holders = conditions.holders.get(key, ())
    if len(holders) < limit:
        return None
    listed = ", ".join(f"#{holder}" for holder in holders)
    return HoldUp(
        HoldUpCode.CONCURRENCY_FULL,
        f"Its concurrency key {key!r} is full: {len(holders)} of {limit} running ({listed}). "
        "It runs when one of them finishes.",
        job.queue,
        summary=f"Concurrency key {key!r} full ({len(holders)}/{limit}: {listed})",
        concurrency_key=key,
        concurrency_limit=limit,
        holders=holders,
    )


def _rate_full(job: Job, conditions: Conditions) -> HoldUp | None:
    key, limit, per = job.rate_key, job.rate_limit, job.rate_per
    if not key or limit is None or per is None:
        return None
    starts, counts = conditions.rate_starts.get(key, ([], []))
    window = Window.of(starts, counts, limit=limit, per=per, now=conditions.now)
    free_at = window.next_start
    if free_at is None:
        return None
    at = when(free_at, conditions.now)
    return HoldUp(
        HoldUpCode.RATE_LIMITED,
        f"Rate-limited: its rate key {key!r} started {window.used} of {limit} allowed in the "
        f"last {format_duration(per)}, so no start is left in the window. The next possible "
        f"start is at {at}; the wait spends no attempt.",
        job.queue,
        summary=f"Rate key {key!r}: 0 of {limit} starts left, next at {at}",
        until=free_at,
        rate_key=key,
        rate_limit=limit,
        starts_left=0,
    )


def next_in_line(job: Job, ahead: int, conditions: Conditions) -> HoldUp:
    """A due job nothing holds back: how many jobs the claim takes before it, and whether a
    worker thread is free to take it (as of the workers' last heartbeats)."""
    count = f"more than {AHEAD_CAP:,}" if ahead >= AHEAD_CAP else f"{ahead:,}"
    if job.concurrency_key:
        free = (job.concurrency_limit or 0) - len(conditions.holders.get(job.concurrency_key, ()))
        slots = ngettext("%(n)d slot", "%(n)d slots", free) % {"n": free}
        where = f"of its concurrency key {job.concurrency_key!r} ({slots} free)"
    else:
        where = f"of its queue {job.queue!r}"
    if ahead:
        line = ngettext(
            "%(count)s due job %(where)s goes before it",
            "%(count)s due jobs %(where)s go before it",
            ahead,
        )
        text = f"Due and in line: {line % {'count': count, 'where': where}}."
        summary = f"In line: {count} ahead"
    else:
        text = f"Due and next in line {where}: the next claim takes it."
        summary = "Next in line"
    threads = conditions.free_threads(job.queue)
    if not threads:
        text += (
            " Every thread of the live workers serving its queue is busy running a job: it "
            "starts when one finishes (or add workers or concurrency)."
        )
        summary += ", every worker thread busy"
    return HoldUp(
        HoldUpCode.NEXT_IN_LINE,
        text,
        job.queue,
        summary=summary,
        concurrency_key=job.concurrency_key,
        concurrency_limit=job.concurrency_limit,
        holders=conditions.holders.get(job.concurrency_key or "", ()),
        ahead=ahead,
        free_threads=threads,
    )
