"""The plain-SQL floors: each workload done with psycopg alone, at the same durability.

A floor is the least a PostgreSQL job queue could do for the workload: a one-table queue with
a primary key and a partial index on ready rows, every write committed the same way litejobs
commits (the server's ``fsync`` and the run's ``synchronous_commit`` apply to both). The
drain, listen and idle floors run in bench child processes (``Drain``, ``Listen``, ``Idle``);
the enqueue floors run in the bench process itself, as do W11's: ``COPY`` of the same rows into
the same table, the least a file import or a feed could do.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg

from . import sales
from .files import COLUMNS
from .jobs import QUEUE

#: What each workload's floor does, printed under the table.
DESCRIPTIONS = {
    "W1": "one INSERT per job, each committed on its own",
    "W2": "one COPY per 1,000 rows, all in one transaction",
    "W3": "per job one transaction: SELECT ... FOR UPDATE SKIP LOCKED, the no-op, UPDATE to "
    "done, COMMIT; as many connections and processes as the workers have",
    "W4": "INSERT and pg_notify in one committed statement, received by a process on LISTEN",
    "W5": "a connection waiting on LISTEN that polls once per LITEJOBS['HEARTBEAT']",
    "W6": "W3's floor over as many rows, with as many processes; the memory row compares each "
    "worker with itself at the checkpoint",
    "W7": "per job: one transaction claiming it (SELECT ... FOR UPDATE SKIP LOCKED, UPDATE to "
    "running), one transaction per step inserting its record, one marking the job done; as "
    "many connections as the worker has threads",
    "W8": "per batch of OUTBOX_BATCH messages one transaction: SELECT the next pending rows "
    "in id order FOR UPDATE, one multi-row INSERT of a job row per message, one UPDATE marking "
    "them published, COMMIT",
    "W9": "none; the baseline is the same workloads on an empty table, in the same round",
    "W10": "W4's floor (INSERT and pg_notify received on LISTEN, enqueue to receipt): the "
    "wake-up any PostgreSQL worker pays; litejobs' figure is from run_at to the body",
    "W11": "one COPY of the same CSV file into the same products table, in one transaction; "
    "litejobs' figure is from the worker's start to the import's end",
    "W11F": "one COPY of the same records (key, JSON payload) into the same buffer table, in one "
    "transaction",
    "W12": "COPY (SELECT the report's columns FROM the same table WHERE tenant = ... ORDER BY id) "
    "TO STDOUT (FORMAT csv, HEADER) streamed to a file through psycopg; litejobs' figure is from "
    "the request to the run's end",
    "W13": "a session advisory lock: SELECT pg_try_advisory_lock(hashtext(key)), then SELECT "
    "pg_advisory_unlock(hashtext(key)), on one autocommit connection (no ttl, no fencing token: "
    "it frees only when the session ends)",
    "W14": "no floor: the baseline is one job enqueued to the same worker once it is idle (its "
    "pickup, enqueue to body); litejobs' figure is from the last child's finished_at to the "
    "callback's started_at",
}

TABLE = "litejobs_bench_floor"
#: W8's floor: the outbox a plain-SQL relay reads.
OUTBOX = "litejobs_bench_floor_outbox"
CHANNEL = "litejobs_bench_floor"
#: W11F's floor writes litejobs' own buffer table, as ``feed()`` does.
BUFFER = "litejobs_bufferedrecord"
#: Bytes per write of W11's COPY.
COPY_CHUNK = 1 << 20
#: W7's floor: one record per step of a job.
STEPS = "litejobs_bench_floor_steps"
#: W11's table: the products a catalog import writes, and the floor's COPY fills.
PRODUCTS = "litejobs_bench_products"
#: Rows per COPY in the ``enqueue_many`` floor, as litejobs writes 1,000 per statement.
CHUNK = 1000

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    id bigserial PRIMARY KEY,
    queue text NOT NULL,
    key text NOT NULL,
    payload jsonb NOT NULL,
    state text NOT NULL DEFAULT 'ready',
    run_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
CREATE INDEX IF NOT EXISTS {TABLE}_ready ON {TABLE} (id) WHERE state = 'ready';
CREATE TABLE IF NOT EXISTS {STEPS} (
    job_id bigint NOT NULL,
    name text NOT NULL,
    output jsonb,
    PRIMARY KEY (job_id, name)
);
CREATE TABLE IF NOT EXISTS {OUTBOX} (
    id bigserial PRIMARY KEY,
    topic text NOT NULL,
    payload jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz
);
CREATE INDEX IF NOT EXISTS {OUTBOX}_pending ON {OUTBOX} (id) WHERE published_at IS NULL;
CREATE TABLE IF NOT EXISTS {PRODUCTS} (
    sku text PRIMARY KEY,
    name text NOT NULL,
    price numeric(12, 2) NOT NULL,
    currency text NOT NULL,
    status text NOT NULL,
    price_eur numeric(12, 2)
);
"""
INSERT_ONE = f"INSERT INTO {TABLE} (queue, key, payload) VALUES (%s, %s, %s::jsonb)"
FILL = f"""
INSERT INTO {TABLE} (queue, key, payload)
SELECT %s, 'floor:' || n, jsonb_build_object('n', n) FROM generate_series(1, %s) AS n
RETURNING id
"""
# W4's floor: a durable row and its wake-up in one statement (one round trip, one commit).
INSERT_AND_NOTIFY = f"""
WITH job AS (INSERT INTO {TABLE} (queue, key, payload) VALUES (%s, %s, %s::jsonb) RETURNING id)
SELECT pg_notify('{CHANNEL}', %s) FROM job
"""
CLAIM = f"SELECT id FROM {TABLE} WHERE state = 'ready' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED"
FINISH = f"UPDATE {TABLE} SET state = 'done', finished_at = clock_timestamp() WHERE id = %s"
START = f"UPDATE {TABLE} SET state = 'running' WHERE id = %s"
RECORD_STEP = f"INSERT INTO {STEPS} (job_id, name, output) VALUES (%s, %s, 'null'::jsonb)"
# W5's floor: what an idle worker must do at least, look for work once a heartbeat.
POLL = f"SELECT count(*) FROM {TABLE} WHERE state = 'ready'"


def connect(params: dict[str, Any]) -> psycopg.Connection:
    """An autocommit psycopg connection: every statement outside ``transaction()`` commits."""
    return psycopg.connect(**params, autocommit=True)


def create(conn: psycopg.Connection) -> None:
    """Create the floor's table (once per scratch database)."""
    conn.execute(SCHEMA)


def reset(conn: psycopg.Connection) -> None:
    """Empty the floor's tables of jobs and step records."""
    conn.execute(f"TRUNCATE {TABLE}, {STEPS} RESTART IDENTITY")


def insert_one(conn: psycopg.Connection, n: int) -> None:
    """W1's floor: one INSERT, committed on its own."""
    conn.execute(INSERT_ONE, (QUEUE, f"floor:{n}", json.dumps({"n": n})))


def copy_many(conn: psycopg.Connection, count: int) -> None:
    """W2's floor: ``count`` rows in one transaction, one COPY per 1,000."""
    with conn.transaction(), conn.cursor() as cursor:
        for start in range(0, count, CHUNK):
            with cursor.copy(f"COPY {TABLE} (queue, key, payload) FROM STDIN") as copy:
                for n in range(start, min(start + CHUNK, count)):
                    copy.write_row((QUEUE, f"floor:{n}", json.dumps({"n": n})))


def fill(conn: psycopg.Connection, count: int) -> int:
    """Insert ``count`` ready rows for a drain (untimed); answers the first id."""
    first: int = min(row[0] for row in conn.execute(FILL, (QUEUE, count)).fetchall())
    return first


def insert_and_notify(conn: psycopg.Connection, n: int, sent: float) -> None:
    """W4's floor: commit a row and a NOTIFY carrying ``sent`` in one statement."""
    conn.execute(INSERT_AND_NOTIFY, (QUEUE, f"pickup:{n}", json.dumps({"n": n}), repr(sent)))


STAGE_OUTBOX = f"""
INSERT INTO {OUTBOX} (topic, payload)
SELECT 'bench.paid', jsonb_build_object('order', n) FROM generate_series(1, %s) AS n
"""
RELAY_READ = f"""
SELECT id, payload::text FROM {OUTBOX} WHERE published_at IS NULL ORDER BY id LIMIT %s
FOR UPDATE
"""
RELAY_INSERT = f"""
INSERT INTO {TABLE} (queue, key, payload)
SELECT %s, 'outbox:' || message.id, message.payload
FROM unnest(%s::bigint[], %s::jsonb[]) AS message (id, payload)
"""
RELAY_MARK = f"UPDATE {OUTBOX} SET published_at = now() WHERE id = ANY(%s::bigint[])"


def stage_outbox(conn: psycopg.Connection, count: int) -> None:
    """Stage ``count`` messages in the floor's outbox (untimed)."""
    conn.execute(f"TRUNCATE {OUTBOX} RESTART IDENTITY")
    conn.execute(STAGE_OUTBOX, (count,))


def relay_outbox(conn: psycopg.Connection, batch: int) -> int:
    """W8's floor: publish the outbox a batch per transaction; answers the rows published."""
    published = 0
    while True:
        with conn.transaction(), conn.cursor() as cursor:
            rows = cursor.execute(RELAY_READ, (batch,)).fetchall()
            if not rows:
                return published
            ids = [row[0] for row in rows]
            payloads = [row[1] for row in rows]
            cursor.execute(RELAY_INSERT, (QUEUE, ids, payloads))
            cursor.execute(RELAY_MARK, (ids,))
        published += len(rows)


def reset_products(conn: psycopg.Connection) -> None:
    """Empty W11's products table."""
    conn.execute(f"TRUNCATE {PRODUCTS}")


def copy_file(conn: psycopg.Connection, path: Path) -> None:
    """W11's floor: the CSV file's rows into the products table, one COPY, one transaction."""
    columns = ", ".join(COLUMNS)
    statement = f"COPY {PRODUCTS} ({columns}) FROM STDIN (FORMAT csv, HEADER true)"
    with (
        path.open("rb") as file,
        conn.transaction(),
        conn.cursor() as cursor,
        cursor.copy(statement) as copy,
    ):
        while chunk := file.read(COPY_CHUNK):
            copy.write(chunk)


def copy_buffer(
    conn: psycopg.Connection, pipeline: str, records: list[dict[str, str]], now: datetime
) -> None:
    """W11F's floor: the records as JSON into the buffer table, one COPY, one transaction."""
    statement = f"COPY {BUFFER} (pipeline, key, payload, fed_at) FROM STDIN"
    with conn.transaction(), conn.cursor() as cursor, cursor.copy(statement) as copy:
        for record in records:
            copy.write_row((pipeline, record["sku"], json.dumps(record), now))


def export_csv(conn: psycopg.Connection, path: Path, tenant: str) -> None:
    """W12's floor: the tenant's sales in id order, as PostgreSQL writes CSV, into a file."""
    columns = ", ".join(sales.COLUMNS)
    statement = (
        f"COPY (SELECT {columns} FROM {sales.TABLE} WHERE tenant = %s ORDER BY id) "
        "TO STDOUT (FORMAT csv, HEADER true)"
    )
    with (
        path.open("wb") as file,
        conn.cursor() as cursor,
        cursor.copy(statement, (tenant,)) as copy,
    ):
        for chunk in copy:
            file.write(chunk)


def _noop() -> None:
    """The floor's job body."""


class Floor:
    """A floor's part in a bench child (``children.Runtime``): it runs until done or stopped;
    what it measured is none of litejobs' counts (a floor that measures says so)."""

    def __init__(self) -> None:
        self._stopping = threading.Event()

    def stop(self) -> None:
        self._stopping.set()

    def count(self) -> int:
        return 0

    def report(self) -> Any:
        return None


class Drain(Floor):
    """W3's floor: ``threads`` connections, each running one transaction per job.

    Claim a row with ``FOR UPDATE SKIP LOCKED``, run the no-op, mark it done, commit; until no
    row is left.
    """

    def __init__(self, params: dict[str, Any], threads: int) -> None:
        super().__init__()
        self.connections = [connect(params) for _ in range(threads)]

    def run(self) -> None:
        threads = [threading.Thread(target=self._drain, args=(c,)) for c in self.connections]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def _drain(self, conn: psycopg.Connection) -> None:
        try:
            while not self._stopping.is_set():
                with conn.transaction():
                    row = conn.execute(CLAIM).fetchone()
                    if row is None:
                        return
                    self._claimed(conn, row)
                self._after_claim(conn, row)
        finally:
            conn.close()

    def _claimed(self, conn: psycopg.Connection, row: Any) -> None:
        """In the claim's transaction: run the job and mark it done."""
        _noop()
        conn.execute(FINISH, row)

    def _after_claim(self, conn: psycopg.Connection, row: Any) -> None:
        """After the claim's commit: nothing (W3's job is done in its claim's transaction)."""


class StepsDrain(Drain):
    """W7's floor: like W3's, but each job takes ``steps`` recorded steps, each committed."""

    def __init__(self, params: dict[str, Any], threads: int, steps: int) -> None:
        super().__init__(params, threads)
        self.steps = steps

    def _claimed(self, conn: psycopg.Connection, row: Any) -> None:
        """In the claim's transaction: mark it started."""
        conn.execute(START, row)

    def _after_claim(self, conn: psycopg.Connection, row: Any) -> None:
        """Each step in a transaction of its own, then the job done in another."""
        for number in range(self.steps):
            with conn.transaction():
                _noop()
                conn.execute(RECORD_STEP, (row[0], f"step-{number}"))
        with conn.transaction():
            conn.execute(FINISH, row)


class Listen(Floor):
    """W4's floor: a connection waiting on LISTEN; records each NOTIFY's delay in ms."""

    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__()
        self.conn = connect(params)
        self.conn.execute(f"LISTEN {CHANNEL}")
        self.latencies: list[float] = []

    def run(self) -> None:
        try:
            while not self._stopping.is_set():
                for notify in self.conn.notifies(timeout=0.1):
                    # A measurement: the sender stamped the payload with time.time().
                    self.latencies.append((time.time() - float(notify.payload)) * 1000)
        finally:
            self.conn.close()

    def count(self) -> int:
        return len(self.latencies)

    def report(self) -> list[float]:
        return self.latencies


class Idle(Floor):
    """W5's floor: a connection waiting on LISTEN that looks for work once per heartbeat."""

    def __init__(self, params: dict[str, Any], heartbeat: float) -> None:
        super().__init__()
        self.conn = connect(params)
        self.conn.execute(f"LISTEN {CHANNEL}")
        self.heartbeat = heartbeat

    def run(self) -> None:
        try:
            next_poll = time.monotonic()
            while not self._stopping.is_set():
                if time.monotonic() >= next_poll:
                    self.conn.execute(POLL)
                    next_poll = time.monotonic() + self.heartbeat
                wait = min(0.2, max(0.0, next_poll - time.monotonic()))
                for _ in self.conn.notifies(timeout=wait):
                    pass
        finally:
            self.conn.close()
