"""The dashboard on the litejobs admin index: per-queue counts linking to the job list, charts
drawn from the per-minute counters, live workers, problems with their fix, in a bounded number
of queries."""

import re
from datetime import timedelta
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from litejobs.admin import charts
from litejobs.core import times
from litejobs.jobs import minutes
from litejobs.models import (
    BUCKET_BOUNDS,
    Job,
    JobMinute,
    JobState,
    MinuteOutcome,
    OperatorAction,
    OperatorVerb,
    QueueState,
)
from tests.factories import (
    JobFactory,
    QueueStateFactory,
    UserFactory,
    WorkerFactory,
    counter_rows,
)
from tests.testapp.jobs import record, send_email

pytestmark = pytest.mark.django_db(transaction=True)

INDEX = reverse("admin:app_list", kwargs={"app_label": "litejobs"})
JOBS = reverse("admin:litejobs_job_changelist")
BULK = reverse("admin:litejobs_job_bulk")


def _cells(html: str, queue: str) -> list[tuple[str, int]]:
    """The (link, count) cells of a queue's row on the dashboard."""
    row = re.search(rf'<tr data-queue="{queue}">(.*?)</tr>', html, re.S)
    assert row, f"no row for {queue}"
    return [
        (unescape(href), int(n))
        for href, n in re.findall(r'<td class="count"><a href="([^"]+)">(\d+)</a>', row.group(1))
    ]


def _legend(html: str, chart_id: str) -> dict[str, str]:
    chart = re.search(rf'<div class="dashboard-chart" id="{chart_id}">(.*?)</figure>', html, re.S)
    assert chart, f"no chart {chart_id}"
    return dict(
        re.findall(r'<li data-series="([^"]+)">.*?</svg> [^:<]+: ([^<]+)</li>', chart.group(1))
    )


def _populate(first: int, n: int) -> None:
    for i in range(first, first + n):
        JobFactory(state=JobState.READY, label=f"r{i}")
        JobFactory(state=JobState.DONE, label=f"d{i}")
        JobFactory(name=send_email.name, queue="emails", key=f"email:{i}", state=JobState.DEAD)
        worker = WorkerFactory()
        held = JobFactory(state=JobState.RUNNING, label=f"h{i}", lease_owner=worker.id)
        worker.in_flight = [held.id]
        worker.save()


def test_the_dashboard_costs_the_same_bounded_queries_whatever_the_jobs(admin_client, clock):
    _populate(0, 1)
    with CaptureQueriesContext(connection) as few:
        assert admin_client.get(INDEX).status_code == 200
    _populate(1, 40)
    with CaptureQueriesContext(connection) as many:
        response = admin_client.get(INDEX)
    html = response.content.decode()
    assert len(many.captured_queries) == len(few.captured_queries) <= 40
    assert html.count('data-worker="') == 41  # every live worker, each with its job
    assert html.count(f"{record.name} #") == 41


def test_every_count_links_to_the_job_list_filtered_to_it(admin_client, clock):
    for i in range(3):
        record.enqueue(label="due", value=i)
    JobFactory(state=JobState.WAITING, label="asleep")
    send_email.enqueue(address="a@example.com")
    JobFactory(name=send_email.name, queue="emails", key="email:gone", state=JobState.DEAD)
    QueueStateFactory(name="emails", reason="mail provider down")
    html = admin_client.get(INDEX).content.decode()
    states = ["ready", "scheduled", "running", "waiting", "failed", "dead"]
    for queue, expected in (("default", [3, 0, 0, 1, 0, 0]), ("emails", [1, 0, 0, 0, 0, 1])):
        cells = _cells(html, queue)
        assert [n for _, n in cells] == expected
        for (href, count), state in zip(cells, states, strict=True):
            url = urlsplit(href)
            assert url.path == JOBS
            assert parse_qs(url.query) == {"queue": [queue], "state__exact": [state]}
            listing = admin_client.get(href)
            assert listing.context["cl"].result_count == count
            # The listing's own filters show the state chosen, and the bulk action takes it.
            assert f"state: {JobState(state).label}" in listing.context["cl"].filter_summary()
            bulk = admin_client.get(BULK + "?" + url.query)
            assert bulk.status_code == 200 and bulk.context["matching_count"] == count
    assert "mail provider down" in html


def test_the_charts_are_drawn_from_the_counters_not_the_job_table(admin_client, clock, run_worker):
    for i in range(3):
        record.enqueue(label="counted", value=i)
    run_worker()
    Job.objects.all().delete()  # purged: the counters still remember them
    html = admin_client.get(INDEX).content.decode()
    for chart_id in ("settled-last-hour", "settled-last-day"):
        assert _legend(html, chart_id)["done"] == "3 jobs"
    assert "latest" in _legend(html, "latency-last-hour")["p50"]


def _drawn_charts(html: str) -> list[str]:
    return re.findall(r'<div class="dashboard-chart" id="[^"]+">.*?</figure>', html, re.S)


def test_the_hourly_rollup_leaves_every_chart_drawn_as_it_was(admin_client, clock):
    counter_rows(clock.now())
    before = _drawn_charts(admin_client.get(INDEX).content.decode())
    assert len(before) == 4 and _legend(before[2], "settled-last-day")["done"] != "0 jobs"
    assert minutes.fold_minutes(clock.now()) > 0
    assert _drawn_charts(admin_client.get(INDEX).content.decode()) == before


def test_lapsed_leases_are_called_out_with_their_fix_and_the_jobs(admin_client, clock):
    worker = WorkerFactory(lease_expires_at=clock.now() - timedelta(minutes=5))
    lost = JobFactory(
        state=JobState.RUNNING,
        lease_owner=worker.id,
        lease_expires_at=clock.now() - timedelta(minutes=5),
    )
    html = admin_client.get(INDEX).content.decode()
    assert f">{times.when(clock.now())}</time>." in html  # to the second, its zone named
    item = re.search(r'<li class="problem" data-code="lease-lapsed">(.*?)</li>', html, re.S)
    assert item, html
    # One sentence, counted once, in words; then the link to the jobs it names.
    text = re.sub(r"<[^>]+>", "", unescape(item.group(1)))
    assert text.startswith("1 running job holds a lease that lapsed: their worker stopped")
    assert "`" not in text and text.endswith("start one. List the job")
    href = unescape(re.search(r'href="([^"]+)"', item.group(1)).group(1))
    assert parse_qs(urlsplit(href).query) == {"ids": [str(lost.id)]}
    assert [job.id for job in admin_client.get(href).context["cl"].result_list] == [lost.id]
    # A filter the bulk action over a filter accepts.
    bulk = admin_client.get(BULK + "?" + urlsplit(href).query)
    assert bulk.status_code == 200 and bulk.context["matching_count"] == 1


def test_the_models_stay_listed_beside_the_dashboard(admin_client):
    html = admin_client.get(INDEX).content.decode()
    sidebar = html[html.index('id="content-related"') :]
    assert JOBS in sidebar
    assert reverse("admin:litejobs_worker_changelist") in sidebar
    assert "litejobs/dashboard.js" in html


def test_a_user_who_may_not_view_jobs_is_told_why_and_sees_no_queue_worker_or_problem(
    client, clock
):
    """A tenant's report user is staff and sees the litejobs section (their report runs), but
    not the dashboard: it shows every tenant's queues, pause reasons, problems, worker hosts
    and running jobs."""
    QueueStateFactory(name="payroll", reason="bank file late")
    worker = WorkerFactory(host="ops-host-7")
    JobFactory(state=JobState.DEAD, label="dead")
    reader = UserFactory(username="north", permissions=["litejobs.view_reportrun"])
    client.force_login(reader)
    response = client.get(INDEX)
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="dashboard-refused"' in html and "Can view job" in html
    for secret in ("payroll", "bank file late", "ops-host-7", worker.id, "dead-jobs"):
        assert secret not in html
    assert 'id="litejobs-dashboard"' not in html
    assert reverse("admin:litejobs_reportrun_changelist") in html  # what they may open

    client.force_login(UserFactory(username="reader", permissions=["litejobs.view_job"]))
    assert "bank file late" in client.get(INDEX).content.decode()


def test_p95_wait_is_never_above_the_longest_wait_there_was(admin_client, clock):
    """One job waited 61 s: its bucket runs from 60 s to 5 min, and interpolating in it read
    a p95 of 4m 48s, longer than any job waited."""
    latency = [0] * (len(BUCKET_BOUNDS) + 1)
    latency[BUCKET_BOUNDS.index(60) + 1] = 1
    JobMinute.objects.create(
        minute=clock.now().replace(second=0, microsecond=0),
        queue="default",
        name=record.name,
        outcome=MinuteOutcome.DONE,
        shard=1,
        count=1,
        timed=1,
        duration_sum=0.2,
        latency_sum=61.0,
        duration_buckets=[1] + [0] * len(BUCKET_BOUNDS),
        latency_buckets=latency,
    )
    assert minutes.quantile(0.95, latency) == pytest.approx(288)  # what the bucket alone says
    html = admin_client.get(INDEX).content.decode()
    for chart_id in ("latency-last-hour", "latency-last-day"):
        assert _legend(html, chart_id)["p95"] == "1m 1s (latest)"


def test_the_settled_chart_counts_jobs_and_events_and_never_paints_dead_green(admin_client, clock):
    counter_rows(clock.now())
    html = admin_client.get(INDEX).content.decode()
    legend = _legend(html, "settled-last-hour")
    assert legend["done"].endswith(" jobs") and legend["dead"].endswith(" jobs")
    assert legend["failed, retry pending"].endswith(" events")
    assert legend["lease lapsed"].endswith(" events")
    dead = re.search(r'<li data-series="dead"><svg[^>]*><rect[^>]*fill="([^"]+)"', html)
    assert dead.group(1) == charts.VERMILLION
    for bar in re.findall(r'<rect class="bar" data-series="dead"[^>]*fill="([^"]+)"', html):
        assert bar == charts.VERMILLION


def _forms(html: str, code: str) -> list[tuple[str, list[tuple[str, str]], str]]:
    """A problem's buttons: each form's target, fields and label."""
    item = re.search(rf'<li class="(?:problem|note)" data-code="{code}">(.*?)</li>', html, re.S)
    assert item, f"no {code}"
    return [
        (unescape(action), re.findall(r'name="([^"]+)" value="([^"]*)"', body), label)
        for action, body, label in re.findall(
            r'<form method="post" action="([^"]+)"[^>]*>(.*?)<button[^>]*>([^<]+)</button>',
            item.group(1),
            re.S,
        )
    ]


def test_a_problem_offers_the_admins_own_action_and_pressing_it_acts(admin_client, clock):
    dead = JobFactory(state=JobState.DEAD, label="died", finished_at=clock.now())
    QueueStateFactory(name="default", reason="bank file late")
    record.enqueue(label="waits")
    html = admin_client.get(INDEX).content.decode()
    text = re.sub(r"<[^>]+>", "", unescape(html))
    assert "manage.py" not in text and "`" not in text  # words, not command lines

    [(url, fields, label)] = _forms(html, "dead-jobs")
    assert label == "Retry it" and url == JOBS
    posted: dict[str, list[str]] = {}
    for name, value in fields:
        posted.setdefault(name, []).append(value)
    admin_client.post(url, posted)
    dead.refresh_from_db()
    assert dead.state == JobState.READY

    [(url, fields, label)] = _forms(html, "queue-paused")
    assert label == "Resume"
    admin_client.post(url, dict(fields))
    assert not QueueState.objects.get(name="default").paused
    assert OperatorAction.objects.filter(verb=OperatorVerb.RESUME).count() == 1


def test_a_viewer_who_may_not_act_is_offered_no_button(client, clock):
    JobFactory(state=JobState.DEAD, label="died", finished_at=clock.now())
    QueueStateFactory(name="default", reason="bank file late")
    record.enqueue(label="waits")
    client.force_login(UserFactory(username="reader", permissions=["litejobs.view_job"]))
    html = client.get(INDEX).content.decode()
    dashboard = html.split('id="litejobs-dashboard"')[1].split('id="dashboard-charts"')[0]
    assert "<form" not in dashboard
    assert "List the job" in html  # what they may follow stays a link


def test_a_problem_counting_more_jobs_than_it_names_links_to_the_newest_it_names(
    admin_client, clock
):
    dead = [JobFactory(state=JobState.DEAD, label=f"d{i}") for i in range(12)]
    html = admin_client.get(INDEX).content.decode()
    item = re.search(r'<li class="problem" data-code="dead-jobs">(.*?)</li>', html, re.S)
    assert item, html
    link = re.search(r'<a class="problem-jobs" href="([^"]+)">([^<]+)</a>', item.group(1))
    assert link.group(2) == "List the newest 10"
    named = [int(i) for i in parse_qs(urlsplit(unescape(link.group(1))).query)["ids"][0].split(",")]
    assert named == [job.id for job in reversed(dead[2:])]
    listed = admin_client.get(unescape(link.group(1))).context["cl"]
    assert [job.id for job in listed.result_list] == named
