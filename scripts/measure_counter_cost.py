"""What the per-minute job counters cost an atomic job's completion, in the server's CPU: the
``complete`` statement (fenced UPDATE plus the counters' upsert) in its own transaction, against
the same statement with the counters' CTE left out, on a scratch database of a PostgreSQL
server on this machine (the backend's CPU is read from /proc). Medians of five rounds of 3,000
completions each, alternating the two.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/scratch python scripts/measure_counter_cost.py

The database must be migrated; the script empties its job and counter tables.
"""

import os
import statistics
import sys
from datetime import UTC, datetime

import psycopg

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from litejobs.sql import COUNT_COMPLETED, queries

JOBS = 3000
ROUNDS = 5
TICKS = os.sysconf("SC_CLK_TCK")


def backend_cpu(pid: int) -> float:
    """Seconds of CPU (user + system) the server process ``pid`` has used."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def seed(dsn: str) -> None:
    """``JOBS`` running jobs, due a second ago and started 0.2 s ago."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("TRUNCATE litejobs_job, litejobs_jobminute CASCADE")
        conn.execute(
            """INSERT INTO litejobs_job (id, name, key, run_at, created_at, started_at, state,
                                         fence, lease_owner, lease_expires_at)
            SELECT n, 'bench.noop', 'k' || n, now() - interval '1 s', now(),
                   now() - interval '0.2 s', 'running', 1, 'bench', now() + interval '1 hour'
            FROM generate_series(1, %s) AS n""",
            [JOBS],
        )
        conn.execute("VACUUM ANALYZE litejobs_job")


def cpu_per_completion(dsn: str, statement: str) -> float:
    """Server CPU µs per completion, each in its own transaction, as an atomic job's."""
    seed(dsn)
    with psycopg.connect(dsn, autocommit=True, prepare_threshold=0) as conn:
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        before = backend_cpu(pid)
        for job_id in range(1, JOBS + 1):
            params = {"id": job_id, "fence": 1, "now": datetime.now(UTC), "result": None}
            with conn.transaction():
                conn.execute(statement, params, prepare=True)
        return (backend_cpu(pid) - before) / JOBS * 1e6


def main() -> None:
    dsn = os.environ["DATABASE_URL"]
    counted = queries()["complete"]
    cases = {"without the counters": counted.replace(COUNT_COMPLETED, "SELECT 1"), "with": counted}
    found: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(ROUNDS):
        for name, statement in cases.items():
            found[name].append(cpu_per_completion(dsn, statement))
    for name, values in found.items():
        shown = ", ".join(f"{value:.0f}" for value in sorted(values))
        print(f"{name}: median {statistics.median(values):.0f} µs [{shown}]")


if __name__ == "__main__":
    main()
