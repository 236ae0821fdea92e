"""The job listing at scale: keyset pages, filters that narrow, counts that never scan."""

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.messages import get_messages
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from litejobs.admin.counting import CappedCountPaginator
from litejobs.bench.workloads import HISTORY
from litejobs.models import Job, JobState
from tests.factories import JobFactory
from tests.testapp.jobs import record

pytestmark = pytest.mark.django_db

JOBS = reverse("admin:litejobs_job_changelist")


def shown(response) -> list[int]:
    return [job.id for job in response.context["cl"].result_list]


def texts(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def make_jobs(count: int, **fields) -> list[Job]:
    return [JobFactory(value=i, **fields) for i in range(count)]


def queries(client, params) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(JOBS, params)
    assert response.status_code == 200
    return len(captured)


PAGES = [
    {},
    {"after": "1000000"},
    {"tenant": "acme"},
    {"payload": "label=x"},
    {"created_at_from": "2026-01-01", "finished_at_to": "2026-12-31"},
]


@pytest.mark.parametrize("params", PAGES)
def test_a_page_costs_the_same_few_queries_at_60_rows_and_at_240(admin_client, clock, params):
    make_jobs(60, tenant="acme", state=JobState.DONE)
    few = queries(admin_client, params)
    make_jobs(180, tenant="acme", state=JobState.DONE)
    many = queries(admin_client, params)
    assert few == many <= 7


def walk(client, params, link: str, first: dict) -> list[list[int]]:
    """Follow the ``newer_url`` / ``older_url`` links from ``first`` until there is none."""
    pages = []
    response = client.get(JOBS, {**params, **first})
    while True:
        pages.append(shown(response))
        url = getattr(response.context["cl"], link)
        if url is None:
            return pages
        response = client.get(JOBS + url)


def test_keyset_pages_show_every_row_exactly_once_forward_and_back(admin_client, clock):
    jobs = make_jobs(120, tenant="acme") + make_jobs(7, tenant="other")
    wanted = sorted((job.id for job in jobs if job.tenant == "acme"), reverse=True)
    forward = walk(admin_client, {"tenant": "acme"}, "older_url", {})
    assert [len(page) for page in forward] == [50, 50, 20]
    assert [i for page in forward for i in page] == wanted
    back = walk(admin_client, {"tenant": "acme"}, "newer_url", {"after": forward[-2][-1]})
    assert back == forward[::-1]


DATED = [
    ("created_at", {"created_at_from": "2026-02-01", "created_at_to": "2026-02-28"}),
    ("finished_at", {"finished_at_from": "2026-02-01", "finished_at_to": "2026-02-28"}),
]


@pytest.mark.parametrize(("column", "dates"), DATED)
def test_a_date_range_pages_by_that_date_ties_by_id_every_row_once_forward_and_back(
    admin_client, clock, column, dates
):
    """Twelve jobs share each instant, so page edges fall inside a tie; the instants are
    enqueued out of order and the jobs finish odd ids first, so neither the ids nor the
    rows' places in the table follow the dates. Creation dates span live jobs too."""
    instants = [datetime(2026, 2, 1 + (n * 7) % 11, 12, tzinfo=UTC) for n in range(11)]
    jobs = [
        JobFactory(label=f"t{n}", value=i, created_at=at)
        for n, at in enumerate(instants)
        for i in range(12)
    ]
    live = {job.pk for job in jobs[::3]} if column == "created_at" else set()
    for turn in (jobs[1::2], jobs[::2]):
        rewritten = Job.objects.filter(pk__in=[job.pk for job in turn])
        rewritten.filter(pk__in=live).update(priority=1)
        rewritten.exclude(pk__in=live).update(state=JobState.DONE, finished_at=F("created_at"))
    JobFactory(label="outside", state=JobState.DONE, created_at=instants[0] + timedelta(days=40))
    wanted = [job.pk for job in sorted(jobs, key=lambda j: (j.created_at, j.pk), reverse=True)]
    forward = walk(admin_client, dates, "older_url", {})
    assert [len(page) for page in forward] == [50, 50, 32]
    assert [i for page in forward for i in page] == wanted
    back = walk(admin_client, dates, "newer_url", {"after": forward[-2][-1]})
    assert back == forward[::-1]


def test_a_date_range_page_whose_edge_job_is_gone_starts_again_from_the_newest(admin_client, clock):
    jobs = make_jobs(60, state=JobState.DONE)
    dates = {"finished_at_from": "2026-01-01"}
    first = shown(admin_client.get(JOBS, dates))
    Job.objects.filter(pk=first[-1]).delete()
    again = shown(admin_client.get(JOBS, {**dates, "after": first[-1]}))
    assert again == sorted((job.pk for job in jobs if job.pk != first[-1]), reverse=True)[:50]


def test_a_date_range_page_reads_a_page_of_its_date_index_not_the_ids(admin_client, clock):
    """20,000 finished jobs whose ids run against their dates (the newest id is the oldest
    job), analyzed; the newest 10,000 by date are asked for."""
    with connection.cursor() as cursor:
        cursor.execute(HISTORY, {"name": record.name, "queue": "default", "count": 20_000})
        cursor.execute("ANALYZE litejobs_job")
        cursor.execute("SELECT now() - interval '10000 seconds'")
        since = cursor.fetchone()[0]
    with CaptureQueriesContext(connection) as captured:
        response = admin_client.get(JOBS, {"created_at_from": since.isoformat()})
    assert len(shown(response)) == 50
    window = next(q["sql"] for q in captured if " LIMIT 51" in q["sql"])
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {window}")
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    scans = [node for node in _nodes(plan[0]["Plan"]) if node.get("Relation Name")]
    assert "litejobs_job_done_created" in {node.get("Index Name") for node in scans}, scans
    assert sum(node["Actual Rows"] for node in scans) <= 2 * 51, scans


def _nodes(node: dict) -> Iterator[dict]:
    yield node
    for child in node.get("Plans", ()):
        yield from _nodes(child)


def test_a_page_never_reads_with_offset(admin_client, clock):
    make_jobs(60)
    with CaptureQueriesContext(connection) as captured:
        admin_client.get(JOBS, {"after": "1000000"})
    assert not any("OFFSET" in q["sql"] for q in captured)


def test_a_listing_on_one_page_counts_the_rows_it_shows_without_a_count(
    admin_client, clock, monkeypatch
):
    failed = JobFactory(state=JobState.FAILED)

    def no_count(paginator):
        raise AssertionError("a listing on one page needs no count")

    monkeypatch.setattr(CappedCountPaginator, "count", property(no_count))
    response = admin_client.get(JOBS, {"state__exact": "failed"})
    assert shown(response) == [failed.id]
    assert response.context["cl"].result_count == 1


def test_the_total_is_the_planners_estimate_above_the_cap_else_the_capped_count(
    admin_client, clock, monkeypatch
):
    monkeypatch.setattr(CappedCountPaginator, "CAP", 60)
    make_jobs(75, state=JobState.DEAD)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE litejobs_job")
    make_jobs(75, tenant="acme")  # unknown to the statistics: the planner expects a handful

    def total(params) -> str:
        page = admin_client.get(JOBS, params).content.decode()
        return " ".join(re.sub(r"<[^>]+>", " ", page).split()).replace("( ", "(")

    assert "about 75 jobs (the database's estimate)" in total({})
    estimate = r"about (\d+) jobs \(the database's estimate\)"
    assert int(re.findall(estimate, total({"state__exact": "dead"}))[0]) >= 75
    assert "60+ jobs (counted up to the first 60" in total({"tenant": "acme"})


# Filters ------------------------------------------------------------------------------------


def test_tenant_and_key_filters_find_live_and_finished_jobs(admin_client, clock):
    live = JobFactory(tenant="acme", label="a")
    finished = JobFactory(tenant="acme", label="b", state=JobState.DONE)
    JobFactory(tenant="other", label="a", state=JobState.DONE)
    JobFactory(label="c")
    assert shown(admin_client.get(JOBS, {"tenant": "acme"})) == [finished.id, live.id]
    assert shown(admin_client.get(JOBS, {"key": "record:b:0"})) == [finished.id]
    assert shown(admin_client.get(JOBS, {"key": "record:a:0", "tenant": "acme"})) == [live.id]


def test_created_and_finished_ranges_take_whole_days(admin_client, clock):
    def at(day: int) -> datetime:
        return datetime(2026, 2, day, 23, 30, tzinfo=UTC)

    old = JobFactory(label="old", created_at=at(1), state=JobState.DONE, finished_at=at(2))
    mid = JobFactory(label="mid", created_at=at(10), state=JobState.DONE, finished_at=at(11))
    live = JobFactory(label="live", created_at=at(10))
    dates = {"created_at_from": "2026-02-10", "created_at_to": "2026-02-10"}
    assert shown(admin_client.get(JOBS, dates)) == [live.id, mid.id]
    dates = {"finished_at_to": "2026-02-11"}
    assert shown(admin_client.get(JOBS, dates)) == [mid.id, old.id]
    dates = {"finished_at_from": "2026-02-05T00:00:00+00:00"}
    assert shown(admin_client.get(JOBS, dates)) == [mid.id]
    assert clock.now() - at(1) > timedelta(days=20)


def test_a_malformed_date_is_an_error_message_not_a_500(admin_client, clock):
    JobFactory()
    response = admin_client.get(JOBS, {"created_at_from": "last tuesday"})
    assert response.status_code == 200
    assert shown(response) == []
    assert any("is not a date" in text for text in texts(response))


def test_the_payload_filter_matches_a_field_or_a_path(admin_client, clock):
    number = JobFactory(label="n", payload={"order": 5, "customer": {"id": 42, "tier": "gold"}})
    text = JobFactory(label="t", payload={"order": "5", "customer": {"id": "42"}})
    other = JobFactory(label="o", state=JobState.DEAD, payload={"order": 6, "customer": {}})
    assert shown(admin_client.get(JOBS, {"payload": "order=5"})) == [text.id, number.id]
    assert shown(admin_client.get(JOBS, {"payload": 'order="5"'})) == [text.id]
    assert shown(admin_client.get(JOBS, {"payload": "customer.id=42"})) == [text.id, number.id]
    assert shown(admin_client.get(JOBS, {"payload": "customer.tier = gold"})) == [number.id]
    assert shown(admin_client.get(JOBS, {"payload": "order=6"})) == [other.id]
    assert shown(admin_client.get(JOBS, {"payload": "order=NaN"})) == []


@pytest.mark.parametrize("typed", ["order", "=5", "customer..id=1", "a.b.c.d.e.f.g.h.i=1"])
def test_a_malformed_payload_filter_is_an_error_message_not_a_500(admin_client, clock, typed):
    JobFactory()
    response = admin_client.get(JOBS, {"payload": typed})
    assert response.status_code == 200
    assert shown(response) == []
    assert any("is not field=value" in text for text in texts(response))


INJECTIONS = [
    "label=x' OR '1'='1",
    "label=x'); DROP TABLE litejobs_job; --",
    "label') OR 1=1 --=x",
    'label={"$ne": null}',
    "label=%",
]


@pytest.mark.parametrize("typed", INJECTIONS)
def test_injection_like_payload_input_is_inert_data(admin_client, clock, typed):
    decoy = JobFactory(label="decoy")
    field, _, value = typed.partition("=")
    target = JobFactory(label="target", payload={field: value})
    response = admin_client.get(JOBS, {"payload": typed})
    assert response.status_code == 200
    assert shown(response) == [target.id]
    assert Job.objects.filter(pk=decoy.id).exists()


def test_the_listing_writes_times_to_the_second_with_the_full_timestamp_on_hover(
    admin_client, clock
):
    created = datetime(2026, 3, 1, 11, 58, 7, 250000, tzinfo=UTC)
    JobFactory(created_at=created, run_at=created)
    page = admin_client.get(JOBS).content.decode()
    assert (
        '<time datetime="2026-03-01T11:58:07.250000+00:00" '
        'title="2026-03-01 11:58:07.250000 UTC">11:58:07 UTC</time>'
    ) in page


def test_the_listing_lets_a_long_job_name_break_after_its_dots_and_underscores(admin_client, clock):
    JobFactory(name="orders.ask_warehouse_to_ship")
    page = admin_client.get(JOBS).content.decode()
    assert "orders.<wbr>ask_<wbr>warehouse_<wbr>to_<wbr>ship</a>" in page


def refusals(response) -> list[tuple[str, str]]:
    """The page's messages as (tags, text)."""
    return [(m.tags, str(m)) for m in get_messages(response.wsgi_request)]


#: Listing parameters a person or a stale link may send, each refused with a coded message
#: above an empty list: (parameters, code, words of the message).
BAD_PARAMETERS = [
    ({"after": "abc"}, "cursor-invalid", "after= takes a job id, not 'abc'"),
    ({"before": "-1"}, "cursor-invalid", "before= takes a job id, not '-1'"),
    ({"after": "99999999999999999999"}, "cursor-invalid", "after= takes a job id"),
    ({"after": "\uff11\uff12"}, "cursor-invalid", "after= takes a job id"),  # full-width digits
    ({"state__exact": "bogus"}, "listing-filter-invalid", "'bogus' is not a job state"),
    ({"state": "dead"}, "listing-filter-invalid", "The job list has no filter 'state'"),
    ({"ids": "1,x"}, "listing-filter-invalid", "are not a list of job ids"),
    ({"ids": ",".join(["1"] * 1001)}, "listing-filter-invalid", "up to 1000 ids"),
    ({"id__in": "abc"}, "listing-filter-invalid", "has no filter 'id__in'"),
    ({"payload__label": "x"}, "listing-filter-invalid", "has no filter 'payload__label'"),
    ({"occurrence__schedule__name": "x"}, "listing-filter-invalid", "has no filter"),
    ({"created_at_from": "last tuesday"}, "listing-filter-invalid", "is not a date"),
    ({"payload": "label"}, "listing-filter-invalid", "is not field=value"),
]


@pytest.mark.parametrize(("params", "code", "words"), BAD_PARAMETERS)
def test_each_bad_listing_parameter_is_a_coded_message_above_an_empty_list(
    admin_client, clock, params, code, words
):
    JobFactory(label="x")  # any parameter ignored would show it
    response = admin_client.get(JOBS, params)
    assert response.status_code == 200
    assert shown(response) == []
    assert any(code in tags and words in text for tags, text in refusals(response)), refusals(
        response
    )
    assert "the list refused its filters" in response.content.decode()


def test_a_refused_parameter_is_left_out_of_the_lists_own_links(admin_client, clock):
    JobFactory(label="x")
    response = admin_client.get(JOBS, {"payload__label": "x", "queue": "default"})
    links = re.findall(r'href="([^"]*)"', response.content.decode())
    assert any("queue=default" in link for link in links)
    assert not any("payload__label" in link for link in links)


def test_a_sensitive_payload_field_is_never_matched(admin_client, clock):
    from tests.testapp.jobs import charge_card, secret_saga

    number = "4111111111111111"
    charged = JobFactory(name=charge_card.name, key="c1", payload={"card_number": number})
    saga = JobFactory(
        name=secret_saga.name, key="s1", payload={"label": "s", "card": {"n": number}}
    )
    cases = [
        # (filter, whether a job is chosen: refused; else searched without the hiding job)
        ({"payload": f"card_number={number}", "name": charge_card.name}, True),
        ({"payload": f"card.n={number}", "name": secret_saga.name}, True),
        ({"payload": f'card={{"n": "{number}"}}', "name": secret_saga.name}, True),
        ({"payload": f"card_number={number}"}, False),
        ({"payload": f"card.n={number}"}, False),
        ({"payload": "card={}"}, False),
    ]
    for params, chosen in cases:
        response = admin_client.get(JOBS, params)
        assert response.status_code == 200
        assert charged.id not in shown(response) and saga.id not in shown(response), params
        said = refusals(response)
        assert all(number not in text for _, text in said)  # never echoed
        coded = [text for tags, text in said if "listing-filter-sensitive" in tags]
        assert len(coded) == 1, said
        if chosen:
            assert "cannot be filtered on" in coded[0] and "error" in said[0][0]
        else:
            assert coded[0].startswith("Not searched: testapp.")
    # A field the job's page shows still matches.
    assert shown(admin_client.get(JOBS, {"payload": "label=s"})) == [saga.id]


def test_a_sensitive_payload_field_is_never_matched_through_a_column_lookup(admin_client, clock):
    JobFactory(name="testapp.charge_card", key="c1", payload={"card_number": "4111111111111111"})
    for lookup in ("payload__card_number", "payload__card_number__startswith"):
        for value in ("4111111111111111", "4"):
            response = admin_client.get(JOBS, {lookup: value})
            assert response.status_code == 200 and shown(response) == []


def test_a_job_no_code_declares_is_not_searched_by_payload(admin_client, clock):
    gone = JobFactory(name="retired.charge", key="g1", payload={"pin": "1234"})
    assert shown(admin_client.get(JOBS, {"payload": "pin=1234"})) == []
    response = admin_client.get(JOBS, {"payload": "pin=1234", "name": "retired.charge"})
    assert shown(response) == []
    assert any(
        "listing-filter-sensitive" in tags and "no installed app declares" in text
        for tags, text in refusals(response)
    )
    assert shown(admin_client.get(JOBS, {"ids": str(gone.id)})) == [gone.id]


def test_a_message_topics_sensitive_field_is_not_searched_in_its_subscribers_jobs(
    admin_client, clock
):
    from tests.outboxapp.jobs import declines_card

    job = JobFactory(
        name=declines_card.name,
        key="m1",
        payload={"message_id": 7, "topic": "test.card-charged", "payload": {"card": "4111"}},
    )
    response = admin_client.get(JOBS, {"payload": "payload.card=4111", "name": declines_card.name})
    assert shown(response) == []
    assert shown(admin_client.get(JOBS, {"payload": "message_id=7"})) == [job.id]


def test_the_ids_filter_lists_the_jobs_named(admin_client, clock):
    jobs = make_jobs(3)
    assert shown(admin_client.get(JOBS, {"ids": f"{jobs[0].id}, {jobs[2].id}"})) == [
        jobs[2].id,
        jobs[0].id,
    ]


def test_an_empty_listing_names_the_typed_filters_too(admin_client, clock):
    JobFactory(label="x")
    params = {"tenant": "acme", "created_at_from": "2026-12-01", "payload": "label=y"}
    content = " ".join(admin_client.get(JOBS, params).content.decode().split())
    assert "No job matches tenant: acme; created: from 2026-12-01; payload: label=y." in content, (
        content
    )


def test_a_django_tasks_rows_are_searched_by_payload_once_the_task_is_chosen(admin_client, clock):
    task = JobFactory(name="task:tests.testapp.tasks.add", key="t1", payload={"args": [1, 2]})
    params = {"payload": "args=[1, 2]", "name": task.name}
    assert shown(admin_client.get(JOBS, params)) == [task.id]
