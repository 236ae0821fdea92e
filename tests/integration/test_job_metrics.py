"""The job families of the Prometheus collector, read from the database after real runs:
queue depth, dead jobs, failed attempts and lost leases, workers alive, and the attempt
counter and duration histogram built from tallies."""

import re
from datetime import timedelta

import pytest
import yaml
from prometheus_client import generate_latest
from prometheus_client.core import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from litejobs.jobs import minutes, retention
from litejobs.metrics.attempts import Tally
from litejobs.metrics.collector import LitejobsCollector, registry
from litejobs.models import AttemptOutcome, Job, JobState
from tests.conftest import ROOT
from tests.factories import JobAttemptFactory, JobFactory, UserFactory, WorkerFactory
from tests.testapp.jobs import gives_up, noop, record

pytestmark = pytest.mark.django_db(transaction=True)


def scrape(source=None) -> dict[tuple[str, tuple], float]:
    """Every sample of one scrape: (name, sorted labels) -> value."""
    text = generate_latest(source or registry()).decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_depth_dead_failed_attempts_and_workers_after_real_runs(clock, run_worker):
    gives_up.enqueue(label="a")
    gives_up.enqueue(label="b")
    run_worker()
    for n in range(3):
        noop.enqueue(n=n)
    record.enqueue(label="later", value=1, run_at=clock.now() + timedelta(hours=1))
    metrics = scrape()
    assert metrics["litejobs_queue_depth", (("queue", "default"),)] == 3  # not the later one
    assert metrics["litejobs_dead_jobs", (("queue", "default"),)] == 2
    failed = ("litejobs_failed_attempts", (("job", gives_up.name), ("outcome", "failed")))
    assert metrics[failed] == 2
    assert metrics["litejobs_leases_lost", ()] == 0
    assert metrics["litejobs_workers_alive", ()] == 0  # the run stopped: its row is gone

    WorkerFactory()
    WorkerFactory(lease_expires_at=clock.now() - timedelta(seconds=1))  # lapsed
    assert scrape()["litejobs_workers_alive", ()] == 1


def test_undeclared_job_names_fold_into_one_label(clock):
    for name in ("gone.one", "gone.two"):
        job = JobFactory(name=name, state=JobState.DEAD)
        JobAttemptFactory(job=job, outcome=AttemptOutcome.LEASE_EXPIRED)
    dead = JobFactory(label="kept", state=JobState.DEAD)
    JobAttemptFactory(job=dead)
    metrics = scrape()
    jobs = {dict(labels)["job"] for name, labels in metrics if name == "litejobs_failed_attempts"}
    assert jobs == {"other", record.name}
    assert (
        metrics["litejobs_failed_attempts", (("job", "other"), ("outcome", "lease_expired"))] == 2
    )
    assert metrics["litejobs_leases_lost", ()] == 2
    assert Job.objects.filter(name__startswith="gone.").count() == 2


def test_tallies_become_the_attempt_counter_and_duration_histogram(clock):
    tallies = [
        Tally(record.name, "done", count=3, duration_sum=1.5, buckets=(1, 0, 1, 1)),
        Tally(record.name, "done", count=2, duration_sum=20.0, buckets=(0, 0, 0, 0)),
        Tally("gone.job", "failed", count=1, duration_sum=0.2, buckets=(0, 1)),
        Tally("gone.other", "failed", count=1, duration_sum=0.01, buckets=(1,)),
    ]
    own = CollectorRegistry(auto_describe=False)
    own.register(LitejobsCollector(tallies=lambda: tallies, bounds=(0.01, 0.5, 1.0, 10.0)))
    metrics = scrape(own)
    done = (("job", record.name), ("outcome", "done"))
    assert scrape(registry(lambda: tallies))["litejobs_job_attempts_total", done] == 5
    assert metrics["litejobs_job_attempts_total", done] == 5
    assert metrics["litejobs_job_duration_seconds_count", done] == 5
    assert metrics["litejobs_job_duration_seconds_sum", done] == 21.5
    buckets = {
        dict(labels)["le"]: value
        for (name, labels), value in metrics.items()
        if name == "litejobs_job_duration_seconds_bucket" and ("outcome", "done") in labels
    }
    assert buckets == {"0.01": 1, "0.5": 1, "1.0": 2, "10.0": 3, "+Inf": 5}
    other = (("job", "other"), ("outcome", "failed"))
    assert metrics["litejobs_job_attempts_total", other] == 2
    assert (
        metrics["litejobs_job_duration_seconds_bucket", (*other[:1], ("le", "0.5"), other[1])] == 2
    )
    # Without a source of tallies neither family is served.
    assert not any(name.startswith("litejobs_job_") for name, _ in scrape(bare()))


def bare() -> CollectorRegistry:
    own = CollectorRegistry(auto_describe=False)
    own.register(LitejobsCollector(tallies=None))
    return own


def test_the_served_histogram_counts_what_the_workers_settled(clock, run_worker):
    record.enqueue(label="a")
    record.enqueue(label="b")
    gives_up.enqueue(label="never")  # dead at once
    run_worker()
    metrics = scrape()
    done = (("job", record.name), ("outcome", "done"))
    dead = (("job", gives_up.name), ("outcome", "dead"))
    assert metrics["litejobs_job_attempts_total", done] == 2
    assert metrics["litejobs_job_attempts_total", dead] == 1
    assert metrics["litejobs_job_duration_seconds_count", done] == 2
    every = (*done[:1], ("le", "+Inf"), done[1])
    assert metrics["litejobs_job_duration_seconds_bucket", every] == 2
    # Past the counters' retention the totals are carried, never lowered (a counter).
    clock.advance(minutes.KEPT + timedelta(minutes=5))
    retention.purge()
    assert scrape()["litejobs_job_attempts_total", done] == 2


ALERTS = ROOT / "docs" / "how-to" / "litejobs-alerts.yml"


def served_names() -> set[str]:
    """Every series name the collector can serve (a histogram's and a counter's samples)."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}
    names = set()
    for family in LitejobsCollector(tallies=list).collect():
        names.add(family.name)
        names.update(family.name + suffix for suffix in suffixes.get(family.type, ()))
    return names


def test_the_example_alert_rules_are_valid_and_use_only_served_metrics(clock):
    rules = yaml.safe_load(ALERTS.read_text())
    [group] = rules["groups"]
    assert group["name"] == "litejobs"
    served = served_names()
    used = set()
    for rule in group["rules"]:
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule
        assert re.fullmatch(r"Litejobs[A-Za-z]+", rule["alert"])
        assert rule["labels"]["severity"] in {"page", "ticket"}
        assert rule["annotations"]["summary"]
        expr = rule["expr"]
        assert expr.count("(") == expr.count(")") and expr.count("[") == expr.count("]")
        assert re.fullmatch(r"(\d+[smhd])?", rule.get("for", ""))
        names = set(re.findall(r"\blitejobs_[a-z_]+", expr))
        assert names, rule["alert"]
        used |= names
    assert used <= served, f"not served: {sorted(used - served)}"
    # The alerts the docs promise: a schedule's missing success, dead letters, lost leases,
    # no worker alive, the outbox backlog.
    assert {
        "litejobs_schedule_overdue",
        "litejobs_schedule_last_success_timestamp_seconds",
        "litejobs_dead_jobs",
        "litejobs_leases_lost",
        "litejobs_workers_alive",
        "litejobs_outbox_oldest_pending_age_seconds",
    } <= used


def test_the_metrics_need_their_own_permission_not_the_staff_flag(client):
    client.force_login(UserFactory(username="north", permissions=["litejobs.view_reportrun"]))
    refused = client.get("/metrics")
    assert refused.status_code == 403
    assert b"litejobs_" not in refused.content
    assert b"litejobs.view_metrics" in refused.content  # the refusal names what is missing

    client.force_login(UserFactory(username="scraper", permissions=["litejobs.view_metrics"]))
    served = client.get("/metrics")
    assert served.status_code == 200 and b"litejobs_jobs" in served.content
