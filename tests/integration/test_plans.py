"""What the planner does with litejobs' hot statements, whatever the table's statistics say.

Two states of the statistics mislead it: none at all (a new install's first backlog, a
restored or upgraded database), and statistics taken while the table held only finished jobs
(a quiet spell in a large install), under which every partial index over live jobs looks
empty. The plans are read with auto_explain, nested statements of litejobs' functions
included, in transactions rolled back.
"""

import json
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from django.db import connection, transaction
from django.test import override_settings

from litejobs.bench.workloads import HISTORY
from litejobs.core.enums import UNCLAIMABLE, sql_list
from litejobs.jobs import claims, transitions
from litejobs.jobs.claims import ClaimedJob
from litejobs.models import Job
from litejobs.sql import prepared, query
from litejobs.sql.cursors import hot_cursor, run_query
from tests.testapp.jobs import record

pytestmark = pytest.mark.django_db(transaction=True)

#: Indexes over every live job: a plan through one of them walks the whole backlog.
OVER_LIVE_JOBS = {"litejobs_job_live_key", "litejobs_job_leases"}


def _nodes(node: dict) -> Iterator[dict]:
    yield node
    for child in node.get("Plans", ()):
        yield from _nodes(child)


def plans_of(run: Callable[[Any], object], *, generic: bool = False) -> list[dict]:
    """The plan nodes of every statement ``run(cursor)`` sent on a hot cursor (with
    ``generic``, the plans PostgreSQL keeps for prepared statements), rolled back."""
    lines: list[str] = []
    pg = connection.connection
    settings = {
        "auto_explain.log_min_duration": "0",
        "auto_explain.log_nested_statements": "on",
        "auto_explain.log_format": "json",
        "client_min_messages": "log",
        "plan_cache_mode": "force_generic_plan" if generic else "auto",
    }
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("LOAD 'auto_explain'")
            for setting, value in settings.items():
                cursor.execute("SELECT set_config(%s, %s, true)", [setting, value])

        def collect(notice: psycopg.errors.Diagnostic) -> None:
            lines.append(notice.message_primary or "")

        pg.add_notice_handler(collect)
        try:
            with hot_cursor(connection) as cursor:
                run(cursor)
        finally:
            pg.remove_notice_handler(collect)
        transaction.set_rollback(True)
    plans = [json.loads(line[line.index("{") :]) for line in lines if "plan:" in line]
    return [node for plan in plans for node in _nodes(plan["Plan"])]


def indexes(plan: list[dict]) -> set[str]:
    return {node["Index Name"] for node in plan if "Index Name" in node}


def claim(clock) -> Callable[[Any], object]:
    return lambda cursor: claims.claim(
        cursor,
        owner="test",
        queues=[],
        limit=10,
        now=clock.now(),
        lease=timedelta(minutes=1),
        avoid=[1, 2, 3],  # jobs this worker handed back
    )


def job_scans(plan: list[dict]) -> list[dict]:
    return [
        node
        for node in plan
        if node["Node Type"].endswith("Scan") and node.get("Relation Name") == "litejobs_job"
    ]


def assert_walks_the_claim_index(plan: list[dict]) -> None:
    assert indexes(plan) >= {"litejobs_job_claimable", "litejobs_job_limited"}, plan
    assert not indexes(plan) & OVER_LIVE_JOBS, plan
    assert all("Index Name" in node for node in job_scans(plan)), plan
    assert not any(node["Node Type"] == "Sort" for node in plan), plan


@pytest.fixture
def finished_history_analyzed():
    """A table analyzed while it held only finished jobs, then given a backlog."""
    with connection.cursor() as cursor:
        cursor.execute(HISTORY, {"name": record.name, "queue": "default", "count": 20_000})
        cursor.execute("VACUUM (ANALYZE) litejobs_job")
    record.enqueue_many([{"label": f"backlog {n}"} for n in range(3_000)])


def test_the_claim_functions_read_the_states_their_indexes_hold():
    """Each function's predicate must match its index's, or the index cannot serve it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT proname, prosrc FROM pg_proc WHERE proname LIKE 'litejobs_%%' ORDER BY 1"
        )
        sources = dict(cursor.fetchall())
    assert f"job.state NOT IN ({sql_list(UNCLAIMABLE)})" in sources["litejobs_claimable_ids"]
    assert (
        "job.state IN ('ready','scheduled','failed','waiting')" in (sources["litejobs_limited_due"])
    )


def test_the_claim_walks_its_indexes_when_statistics_saw_only_finished_jobs(
    clock, finished_history_analyzed
):
    assert_walks_the_claim_index(plans_of(claim(clock)))
    assert_walks_the_claim_index(plans_of(claim(clock), generic=True))


def test_the_claim_walks_its_indexes_on_a_table_never_analyzed(clock):
    for page in range(6):
        record.enqueue_many([{"label": f"backlog {page} {n}"} for n in range(10_000)])
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM pg_statistic WHERE starelid = 'litejobs_job'::regclass")
        cursor.execute("UPDATE pg_class SET reltuples = -1 WHERE oid = 'litejobs_job'::regclass")
    assert_walks_the_claim_index(plans_of(claim(clock)))


@pytest.mark.parametrize("generic", [False, True], ids=["fresh plan", "kept plan"])
def test_a_claimed_job_is_written_through_its_primary_key_whatever_the_statistics(
    clock, finished_history_analyzed, generic
):
    job = ClaimedJob.from_row(
        {
            **Job.objects.filter(state="ready").values().first(),
            "attempts": 1,
            "fence": 7,
        }
    )
    now = clock.now()

    def write(cursor: Any) -> None:
        transitions.complete(cursor, job, now=now, result_json=None)
        transitions.complete_batch(cursor, [(job, now, None)])
        run_query(
            cursor,
            "step_write",
            {
                "job_id": job.id,
                "fence": job.fence,
                "name": "a step",
                "kind": "run",
                "state": "completed",
                "output": None,
                "error": "",
                "executions": 1,
                "once": False,
                "now": now,
                "finished_at": now,
                "wake_at": None,
                "event": "",
                "match": None,
                "sequence": 1,
            },
        )

    plan = plans_of(write, generic=generic)
    scans = job_scans(plan)
    # One each, and the batched acknowledgement's lock in id order before its update.
    assert len(scans) == 4, plan
    assert {node.get("Index Name") for node in scans} == {"litejobs_job_pkey"}, plan


def prepared_here() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return {text for (text,) in cursor.fetchall()}


def test_the_marked_statements_are_prepared_on_djangos_connections_and_nothing_else(clock):
    """Django opens connections with psycopg's preparing turned off, which also ignores an
    explicit request; litejobs' marked statements are prepared anyway, the ORM's never."""
    connection.close()  # a fresh connection, as Django opens it
    for n in range(10):
        record.enqueue(label=f"job {n}")
        Job.objects.filter(state="ready").count()
    statements = prepared_here()
    assert any(text.startswith(query("enqueue")[:200]) for text in statements), statements
    assert not any("COUNT(*)" in text for text in statements), statements
    assert {"enqueue", "claim", "complete", "step_write"} <= prepared()


def test_nothing_is_prepared_when_prepared_statements_are_off(clock):
    connection.close()
    with override_settings(LITEJOBS={"PREPARED_STATEMENTS": False}):
        for n in range(10):
            record.enqueue(label=f"job {n}")
        assert prepared_here() == set()


def test_the_relay_reads_a_batch_of_messages_through_their_primary_key(clock):
    """The subscriber jobs' statement is prepared: the plan kept for it must hold for any
    batch size."""
    from litejobs.jobs.enqueue import common_columns
    from litejobs.outbox import stage
    from tests.outboxapp.jobs import record_paid

    ids = [stage(record_paid.topic, {"order": n}) for n in range(3)]
    with connection.cursor() as cursor:  # a week of published messages
        cursor.execute(
            "INSERT INTO litejobs_outboxmessage (topic, key, tenant, payload, created_at, "
            "published_at) SELECT %s, '', '', jsonb_build_object('n', n), now(), now() "
            "FROM generate_series(1, 20000) AS n",
            [record_paid.topic],
        )
        cursor.execute("ANALYZE litejobs_outboxmessage")
    now = clock.now()

    def publish(cursor: Any) -> None:
        run_query(
            cursor,
            "outbox_subscriber_jobs",
            {
                **common_columns(record_paid, (now, now), 0),
                "concurrency_key": None,
                "ids": ids,
            },
        )

    plan = plans_of(publish, generic=True)
    reads = [n for n in plan if n.get("Relation Name") == "litejobs_outboxmessage"]
    assert [n.get("Index Name") for n in reads] == ["litejobs_outboxmessage_pkey"], plan
    assert "outbox_subscriber_jobs" in prepared()


TWO_DAYS_OF_COUNTERS = """
INSERT INTO litejobs_jobminute (minute, queue, name, outcome, shard, count, timed, duration_sum,
                                latency_sum, duration_buckets, latency_buckets)
SELECT date_trunc('minute', now()) - make_interval(mins => m), 'default', 'job' || j, 'done', s,
       10, 10, 1, 1, array_fill(0::bigint, ARRAY[16]), array_fill(0::bigint, ARRAY[16])
FROM generate_series(0, 2879) AS m, generate_series(1, 5) AS j, generate_series(1, 4) AS s
"""


def test_the_live_dashboards_version_read_reads_no_job(finished_history_analyzed):
    """Read about once a second per web process while a dashboard is open: it must grow neither
    with the finished jobs nor with the backlog (0.04 ms of execution over a million jobs)."""

    with connection.cursor() as cursor:  # two days of counters, as the dashboard keeps
        cursor.execute(TWO_DAYS_OF_COUNTERS)
        cursor.execute("ANALYZE litejobs_jobminute")

    def read(_hot: Any) -> None:
        with connection.cursor() as cursor:  # the watcher's connection binds client-side
            cursor.execute(query("dashboard_version"), {"db_now": None})

    plan = plans_of(read)
    assert not job_scans(plan), plan  # claims are read from the fence sequence
    minute_scans = [n for n in plan if n.get("Relation Name") == "litejobs_jobminute"]
    assert minute_scans and all("Index Name" in node for node in minute_scans), plan
