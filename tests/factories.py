"""factory-boy factories for the rows tests build by hand: jobs in any state and their failed
attempts and steps, worker and leader rows, queue switches, staff users holding permissions and
TOTP devices. Both sessions of the suite use them (the demo's tests too); the test app's own rows
have theirs in ``tests/testapp/factories.py``.

Times are ``litejobs.clock.now()``: under the ``clock`` fixture, its frozen instant.
"""

from __future__ import annotations

import random
from datetime import timedelta

import factory
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import Permission
from factory.django import DjangoModelFactory

from litejobs import clock
from litejobs.core.enums import (
    TERMINAL,
    AttemptOutcome,
    JobState,
    LeaderRole,
    MinuteOutcome,
    StepState,
)
from litejobs.exceptions import UnknownJob
from litejobs.jobs import catalog

#: A job that ran has spent an attempt; one due later waits an hour.
RAN = (JobState.RUNNING, *TERMINAL)
DUE_LATER = (JobState.SCHEDULED, JobState.FAILED)


def max_attempts_of(name: str) -> int:
    """The attempts an enqueue of ``name`` allows: its declaration's, or the column's default
    for a name nothing here declares (a row of another release)."""
    try:
        return catalog.get(name).max_attempts
    except UnknownJob:
        return 1


class JobFactory(DjangoModelFactory):
    """A job row as ``testapp.record`` enqueues it (``label``, ``value``), put straight into
    ``state`` with the columns a real run would have set: an attempt and a lease while running,
    a finish time once finished, a ``run_at`` an hour ahead while scheduled or failed."""

    class Meta:
        model = "litejobs.Job"

    class Params:
        label = "x"
        value = 0

    name = "testapp.record"
    key = factory.LazyAttribute(lambda job: f"record:{job.label}:{job.value}")
    payload = factory.LazyAttribute(lambda job: {"label": job.label, "value": job.value})
    state = JobState.READY
    max_attempts = factory.LazyAttribute(lambda job: max_attempts_of(job.name))
    created_at = factory.LazyFunction(clock.now)
    run_at = factory.LazyAttribute(
        lambda job: clock.now() + timedelta(hours=1) if job.state in DUE_LATER else clock.now()
    )
    attempts = factory.LazyAttribute(lambda job: 1 if job.state in RAN else 0)
    lease_owner = factory.LazyAttribute(
        lambda job: "worker-1" if job.state == JobState.RUNNING else ""
    )
    lease_expires_at = factory.LazyAttribute(
        lambda job: clock.now() + timedelta(minutes=1) if job.state == JobState.RUNNING else None
    )
    finished_at = factory.LazyAttribute(lambda job: clock.now() if job.state in TERMINAL else None)


class ReleasedJobFactory(JobFactory):
    """A row as a web process of another release writes it: a job ``name`` this process may not
    declare, its ``payload`` at the payload ``version`` of that release."""

    key = factory.LazyAttribute(lambda job: f"k:{job.name}:{job.version}")
    payload = factory.LazyFunction(dict)
    version = 1


def heartbeat_row(now, owner: str = "worker-1") -> dict:
    """The Worker row a heartbeat statement takes (``leases.heartbeat(worker=...)``)."""
    return {
        "owner": owner,
        "host": "h",
        "pid": 1,
        "queues_json": "[]",
        "concurrency": 1,
        "started_at": now,
        "now": now,
        "lease": timedelta(minutes=1),
        "forget_after": timedelta(hours=1),
        "stopping": False,
    }


class JobAttemptFactory(DjangoModelFactory):
    """A failed attempt in the history of ``job`` (which the caller gives)."""

    class Meta:
        model = "litejobs.JobAttempt"

    number = 1
    finished_at = factory.LazyFunction(clock.now)
    outcome = AttemptOutcome.FAILED


class JobStepFactory(DjangoModelFactory):
    """A step of a job, completed unless told otherwise."""

    class Meta:
        model = "litejobs.JobStep"

    job = factory.SubFactory(JobFactory)
    name = factory.Sequence(lambda n: f"step-{n}")
    state = StepState.COMPLETED
    created_at = factory.LazyFunction(clock.now)


class WorkerFactory(DjangoModelFactory):
    """A live ``runworker`` row serving every queue, its lease a minute ahead."""

    class Meta:
        model = "litejobs.Worker"

    id = factory.Sequence(lambda n: f"worker-{n}")
    host = factory.LazyAttribute(lambda worker: f"host-{worker.id}")
    pid = 1
    queues = factory.LazyFunction(list)
    concurrency = 1
    started_at = factory.LazyFunction(clock.now)
    last_heartbeat = factory.LazyAttribute(lambda worker: worker.started_at)
    lease_expires_at = factory.LazyAttribute(
        lambda worker: worker.started_at + timedelta(minutes=1)
    )


class QueueStateFactory(DjangoModelFactory):
    """An operator's switch on a queue: paused unless told otherwise."""

    class Meta:
        model = "litejobs.QueueState"

    name = "default"
    paused = True
    changed_at = factory.LazyFunction(clock.now)


class LeaderLeaseFactory(DjangoModelFactory):
    """The relay's leader lease, held by another process for the next 15 seconds."""

    class Meta:
        model = "litejobs.LeaderLease"

    name = LeaderRole.RELAY
    owner = "another-process"
    host = "elsewhere"
    pid = 1
    fence = 1
    acquired_at = factory.LazyFunction(clock.now)
    renewed_at = factory.LazyAttribute(lambda lease: lease.acquired_at)
    expires_at = factory.LazyAttribute(lambda lease: lease.acquired_at + timedelta(seconds=15))


class UserFactory(DjangoModelFactory):
    """A staff user whose password is their username, holding ``permissions``
    (``"app_label.codename"`` each)."""

    class Meta:
        model = "auth.User"
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.LazyAttribute(lambda user: make_password(user.username))
    is_staff = True

    @factory.post_generation
    def permissions(user, create, extracted, **kwargs):
        grant(user, extracted or ())


def grant(user, permissions) -> None:
    """Give ``user`` each of ``permissions`` (``"app_label.codename"``)."""
    for permission in permissions:
        app_label, codename = permission.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )


#: A TOTP device's fixed key (hex): tests compute its codes the way a phone does.
TOTP_KEY = b"tests-finance-phone!".hex()


class TOTPDeviceFactory(DjangoModelFactory):
    """A confirmed TOTP device (django-otp's), as an administrator adds one for a user."""

    class Meta:
        model = "otp_totp.TOTPDevice"

    user = factory.SubFactory(UserFactory)
    name = "finance phone"
    key = TOTP_KEY
    confirmed = True


def counter_rows(
    now, *, hours: int = 26, sessions: int = 2, seed: int = 7, shards_from: int = 1000
) -> int:
    """Per-minute job counters over the last ``hours`` (every minute of the last 90, every
    seventh before), as several worker sessions (numbered from ``shards_from``) write them:
    two queues, two job names, three outcomes, random counts and histograms. Durations and
    latencies are multiples of 1/8 s, so their sums are exact in any order. Answers how many
    rows were written."""
    from litejobs.models import JobMinute

    rng = random.Random(seed)
    latest = now.replace(second=0, microsecond=0)
    ages = sorted({*range(90), *range(0, hours * 60, 7)})
    rows = [
        _counter_row(rng, latest - timedelta(minutes=age), queue, name, outcome, shard)
        for age in ages
        for queue in ("default", "emails")
        for name in ("tests.record", "tests.send_email")
        for outcome in (MinuteOutcome.DONE, MinuteOutcome.FAILED, MinuteOutcome.DEAD)
        for shard in range(shards_from, shards_from + sessions)
    ]
    JobMinute.objects.bulk_create(rows)
    return len(rows)


def _counter_row(rng, minute, queue, name, outcome, shard):
    from litejobs.models import BUCKET_BOUNDS, JobMinute

    timed = rng.randint(0, 9)
    latency, duration = ([0] * (len(BUCKET_BOUNDS) + 1) for _ in range(2))
    for _ in range(timed):
        latency[rng.randrange(len(latency))] += 1
        duration[rng.randrange(len(duration))] += 1
    return JobMinute(
        minute=minute,
        queue=queue,
        name=name,
        outcome=outcome,
        shard=shard,
        count=timed + rng.randint(0, 2),
        timed=timed,
        duration_sum=rng.randint(0, 800) / 8,
        latency_sum=rng.randint(0, 800) / 8,
        duration_buckets=duration,
        latency_buckets=latency,
    )
