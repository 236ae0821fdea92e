"""litejobs' named SQL: what the ORM cannot express (claims, fenced transitions, heartbeats,
conditional claims of work items), one file per feature family, and how it runs.

Each ``.sql`` file here holds statements under ``-- name: <statement>`` lines (``jobs.sql``,
``leases.sql``, ``leadership.sql``, ``steps.sql``, ``scheduling.sql``, ``outbox.sql``,
``webhooks.sql``, ``workqueues.sql``, ``waiting.sql``); a name is used by exactly one
function. ``{claimable}``,
``{unclaimable}``, ``{live}``, ``{terminal}``, ``{finished_occurrences}``, ``{live_items}``
and ``{finished_items}`` expand to the state lists of ``litejobs.core.enums``; ``{db_now}`` to
the instant lease arithmetic runs at (the ``db_now`` parameter, from
``litejobs.clock.lease_instant()``: NULL means the database's own clock). Values are always
bound parameters (``%(name)s``). ``{count_settled}`` is the per-minute counters' upsert
(``COUNT_SETTLED``) that every statement settling jobs runs as a CTE after one named
``settled``. How they run — the cursors, ``run_query`` and reading rows by
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
from ..core.sql import Statements

#: Adds the jobs of the CTE ``settled`` (columns queue, name, outcome, due_at, started_at, at)
#: to the per-minute counters (``litejobs.models.minutes``), one upsert per group, on the
#: writing session's own rows (shard = its backend pid): concurrent settlers never wait on
#: each other's counter row. Used as a data-modifying CTE of every settling statement.
COUNT_SETTLED = """INSERT INTO litejobs_jobminute AS counter (
        minute, queue, name, outcome, shard, count, timed, duration_sum, latency_sum,
        duration_buckets, latency_buckets
    )
    SELECT date_trunc('minute', at, 'UTC'), queue, name, outcome, pg_backend_pid(), count(*),
           count(duration), COALESCE(sum(duration), 0), COALESCE(sum(latency), 0),
           litejobs_buckets(array_agg(duration)), litejobs_buckets(array_agg(latency))
    FROM (
        SELECT at, queue, name, outcome,
               extract(epoch FROM at - started_at)::float8 AS duration,
               -- GREATEST skips NULLs: a job that never started has no latency, not 0.
               CASE WHEN started_at IS NOT NULL
                    THEN GREATEST(extract(epoch FROM started_at - due_at)::float8, 0) END
               AS latency
        FROM settled
    ) AS timed
    GROUP BY 1, 2, 3, 4
    ON CONFLICT (minute, queue, name, outcome, shard) DO UPDATE SET
        count = counter.count + EXCLUDED.count,
        timed = counter.timed + EXCLUDED.timed,
        duration_sum = counter.duration_sum + EXCLUDED.duration_sum,
        latency_sum = counter.latency_sum + EXCLUDED.latency_sum,
        duration_buckets = litejobs_add_counts(counter.duration_buckets, EXCLUDED.duration_buckets),
        latency_buckets = litejobs_add_counts(counter.latency_buckets, EXCLUDED.latency_buckets)"""

#: Leases are written and compared on the database's clock unless a test clock supplies it.
DB_NOW = "COALESCE(%(db_now)s::timestamptz, statement_timestamp())"


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
        "count_settled": COUNT_SETTLED,
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
