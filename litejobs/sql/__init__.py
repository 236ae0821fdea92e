"""litejobs' named SQL: what the ORM cannot express (claims, fenced transitions, heartbeats,
conditional claims of work items), one file per feature family, and how it runs.

Each ``.sql`` file here holds statements under ``-- name: <statement>`` lines (``jobs.sql``,
``leases.sql``, ``leadership.sql``, ``steps.sql``, ``scheduling.sql``, ``outbox.sql``,
``webhooks.sql``, ``workqueues.sql``, ``holdups.sql``, ``hooks.sql``, ``locks.sql``); a name
is used by exactly one function. ``{claimable}``, ``{unclaimable}``, ``{live}``, ``{terminal}``,
``{finished_occurrences}``, ``{live_items}`` and ``{finished_items}`` expand to the state
lists of ``litejobs.core.enums``; ``{db_now}`` to the instant lease arithmetic runs at (the
``db_now`` parameter, from ``litejobs.core.clock.lease_instant()``: NULL means the database's
own clock). Values are always
bound parameters (``%(name)s``). ``{insert_job}`` is the insert of one new job
(``INSERT_JOB``) the enqueues share. ``{count_settled}`` is the per-minute counters' upsert
(``COUNT_SETTLED``) that every statement settling jobs runs as a CTE after one named
``settled`` (``{count_completed}``, ``COUNT_COMPLETED``, where that is one started job).
How they run — the cursors, ``run_query`` (the one way any of them runs) and reading rows by
column name — is ``cursors``.

A claimed job is addressed as ``id = … AND fence = … AND state COLLATE "C" = 'running'``.
The collation changes nothing in what matches, but it keeps the planner from proving the
partial indexes' predicates (the live key's, the leases') from the condition, so the lookup
always goes through the primary key: statistics taken while the table held only finished
jobs call those indexes empty, and a plan through one then walks every live job.
"""

from __future__ import annotations

from ..core.enums import (
    CLAIMABLE,
    FINISHED_ITEM,
    LIVE,
    LIVE_ITEM,
    OCCURRENCE_FINISHED,
    TERMINAL,
    UNCLAIMABLE,
    sql_list,
)
from ..core.histogram import BUCKET_BOUNDS
from ..core.sql import Statements

_BUCKETS = range(len(BUCKET_BOUNDS) + 1)
_BOUNDS = "ARRAY[" + ", ".join(map(str, BUCKET_BOUNDS)) + "]::float8[]"


def _bucket_counts(bucket_column: str) -> str:
    """An array of how many rows of the group have each histogram bucket in ``bucket_column``
    (a NULL bucket: in none)."""
    counts = ", ".join(
        f"count(*) FILTER (WHERE {bucket_column} = {bucket})::bigint" for bucket in _BUCKETS
    )
    return f"ARRAY[{counts}]"


def _added(column: str) -> str:
    """The counter's ``column`` array plus the conflicting row's, element by element."""
    sums = ", ".join(
        f"counter.{column}[{bucket + 1}] + EXCLUDED.{column}[{bucket + 1}]" for bucket in _BUCKETS
    )
    return f"ARRAY[{sums}]"


def _summed(column: str) -> str:
    """The group's ``column`` arrays summed element by element."""
    sums = ", ".join(f"sum({column}[{bucket + 1}])::bigint" for bucket in _BUCKETS)
    return f"ARRAY[{sums}]"


def _one_hot(bucket_column: str) -> str:
    """An array holding 1 at the bucket in ``bucket_column`` (never NULL here), 0 elsewhere."""
    flags = ", ".join(f"({bucket_column} = {bucket})::integer" for bucket in _BUCKETS)
    return f"ARRAY[{flags}]"


def _bumped(column: str) -> str:
    """An upsert's assignment adding one to the element of ``column`` where the conflicting
    row's one-hot array holds its 1."""
    element = f"{column}[array_position(EXCLUDED.{column}, 1::bigint)]"
    return f"{element} = counter.{element} + 1"


# Each settled job's duration and latency, in seconds, and their buckets. ``width_bucket``
# over an array is the costly call here: it runs once per job and value (OFFSET 0 keeps the
# planner from copying it into every expression that reads the bucket).
_TIMED = f"""SELECT at, queue, name, outcome, duration, latency,
               width_bucket(duration, {_BOUNDS}) AS duration_bucket,
               width_bucket(latency, {_BOUNDS}) AS latency_bucket
        FROM (
            SELECT at, queue, name, outcome,
                   extract(epoch FROM at - started_at)::float8 AS duration,
                   -- GREATEST skips NULLs: a job that never started has no latency, not 0.
                   CASE WHEN started_at IS NOT NULL
                        THEN GREATEST(extract(epoch FROM started_at - due_at)::float8, 0) END
                   AS latency
            FROM settled
        ) AS seconds
        OFFSET 0"""

#: Adds the jobs of the CTE ``settled`` (columns queue, name, outcome, due_at, started_at, at)
#: to the per-minute counters (``litejobs.models.minutes``), one upsert per group, on the
#: writing session's own rows (shard = its backend pid): concurrent settlers never wait on
#: each other's counter row. Used as a data-modifying CTE of every settling statement, so it
#: is built of plain expressions: a function call here would be planned on every statement.
COUNT_SETTLED = f"""INSERT INTO litejobs_jobminute AS counter (
        minute, queue, name, outcome, shard, count, timed, duration_sum, latency_sum,
        duration_buckets, latency_buckets
    )
    SELECT date_trunc('minute', at, 'UTC'), queue, name, outcome, pg_backend_pid(), count(*),
           count(duration), COALESCE(sum(duration), 0), COALESCE(sum(latency), 0),
           {_bucket_counts("duration_bucket")},
           {_bucket_counts("latency_bucket")}
    FROM (
        {_TIMED}
    ) AS timed
    GROUP BY 1, 2, 3, 4
    ON CONFLICT (minute, queue, name, outcome, shard) DO UPDATE SET
        count = counter.count + EXCLUDED.count,
        timed = counter.timed + EXCLUDED.timed,
        duration_sum = counter.duration_sum + EXCLUDED.duration_sum,
        latency_sum = counter.latency_sum + EXCLUDED.latency_sum,
        duration_buckets = {_added("duration_buckets")},
        latency_buckets = {_added("latency_buckets")}"""

#: ``COUNT_SETTLED`` for a CTE ``settled`` of exactly one job that started (an atomic job's
#: completion, one statement per job): no grouping and no aggregates, and the upsert adds one
#: to the bucket elements in place. The same rows and the same sums as ``COUNT_SETTLED``.
COUNT_COMPLETED = f"""INSERT INTO litejobs_jobminute AS counter (
        minute, queue, name, outcome, shard, count, timed, duration_sum, latency_sum,
        duration_buckets, latency_buckets
    )
    SELECT date_trunc('minute', at, 'UTC'), queue, name, outcome, pg_backend_pid(), 1, 1,
           duration, latency, {_one_hot("duration_bucket")}, {_one_hot("latency_bucket")}
    FROM (
        {_TIMED}
    ) AS timed
    ON CONFLICT (minute, queue, name, outcome, shard) DO UPDATE SET
        count = counter.count + 1,
        timed = counter.timed + 1,
        duration_sum = counter.duration_sum + EXCLUDED.duration_sum,
        latency_sum = counter.latency_sum + EXCLUDED.latency_sum,
        {_bumped("duration_buckets")},
        {_bumped("latency_buckets")}"""

#: Leases are written and compared on the database's clock unless a test clock supplies it.
DB_NOW = "COALESCE(%(db_now)s::timestamptz, statement_timestamp())"


#: The insert of one new job, its values the bound parameters of ``common_columns`` and one
#: row's (``litejobs.jobs.enqueue``): ``enqueue`` and ``enqueue_debounced`` differ only in what
#: a live job of the same key makes of it.
INSERT_JOB = """INSERT INTO litejobs_job (
    name, queue, key, tenant, payload, state, priority, run_at, max_attempts,
    concurrency_key, concurrency_limit, created_at, traceparent, occurrence_id, version, module,
    settle_hook, rate_key, rate_limit, rate_per
) VALUES (
    %(name)s, %(queue)s, %(key)s, %(tenant)s, %(payload)s::jsonb, %(state)s, %(priority)s,
    %(run_at)s, %(max_attempts)s, %(concurrency_key)s, %(concurrency_limit)s, %(now)s,
    %(traceparent)s, %(occurrence_id)s, %(version)s, %(module)s, %(settle_hook)s,
    %(rate_key)s, %(rate_limit)s, %(rate_per)s
)"""


def _placeholders() -> dict[str, str]:
    return {
        "claimable": sql_list(CLAIMABLE),
        "unclaimable": sql_list(UNCLAIMABLE),
        "live": sql_list(LIVE),
        "terminal": sql_list(TERMINAL),
        "finished_occurrences": sql_list(OCCURRENCE_FINISHED),
        "live_items": sql_list(LIVE_ITEM),
        "finished_items": sql_list(FINISHED_ITEM),
        "db_now": DB_NOW,
        "insert_job": INSERT_JOB,
        "count_settled": COUNT_SETTLED,
        "count_completed": COUNT_COMPLETED,
        "summed_duration_buckets": _summed("duration_buckets"),
        "summed_latency_buckets": _summed("latency_buckets"),
        "added_duration_buckets": _added("duration_buckets"),
        "added_latency_buckets": _added("latency_buckets"),
    }


_statements = Statements(__package__, _placeholders)


def queries() -> dict[str, str]:
    """Every named statement, with the state lists filled in."""
    return _statements.all


def query(name: str) -> str:
    """The SQL of the named statement."""
    return _statements[name]


def prepared() -> frozenset[str]:
    """The statements prepared server-side on a hot cursor (marked ``-- prepared``)."""
    return _statements.prepared
