"""The orders app's schedules, kept apart from the jobs they trigger (``jobs.py``).

- ``orders.nightly-reconcile`` runs at 02:00 UTC: reconciliation has no local meaning, so
  it is a UTC schedule and daylight saving never moves it. Every missed night must be
  reconciled, so after downtime it catches up the last seven (``run_all``).
- ``orders.nightly-receipts`` runs at 03:00 UTC: the receipts still missing for the day
  before go out as one batch, and its summary reaches ops once, when the last has ended.
- ``orders.statement-9am`` is business-local: finance in Berlin reads the statement at 9:00
  their time all year. 09:00 is never inside Berlin's DST gap or overlap (02:00-03:00), but the
  behaviour is stated so a change of time or zone stays reviewable: a 9:00 that did not exist
  would run at the first valid instant after the gap (``shift``), one that happened twice
  would run once, at the first (``first``). A missed statement is still wanted, once
  (``run_once``).
- ``orders.reconcile-day`` is a manual job: an operator reconciles a given day by hand after
  a data repair, here or in production, if they are one of the demo's operators.
"""

from litejobs import manual, schedule

from .jobs import reconcile_orders, send_missing_receipts, send_statement

DEMO_OPERATORS = frozenset({"admin", "ops"})

schedule(
    "orders.nightly-reconcile",
    job=reconcile_orders,
    cron="0 2 * * *",
    timezone="UTC",
    jitter="5m",
    overlap="forbid",
    misfire="run_all",
    max_catchup=7,
    retention="90d",
    operating_owner="ops@example.com",
    record_owner="finance@example.com",
    status="active",
)

schedule(
    "orders.nightly-receipts",
    job=send_missing_receipts,
    cron="0 3 * * *",
    timezone="UTC",
    overlap="forbid",
    misfire="run_once",
    retention="90d",
    operating_owner="ops@example.com",
    record_owner="finance@example.com",
    status="active",
)

schedule(
    "orders.statement-9am",
    job=send_statement,
    cron="0 9 * * *",
    timezone="Europe/Berlin",
    local_time_reason="finance in Berlin reads the statement at 9:00 their time, all year",
    dst_skipped="shift",
    dst_repeated="first",
    overlap="forbid",
    misfire="run_once",
    retention="90d",
    operating_owner="ops@example.com",
    record_owner="finance@example.com",
    status="active",
)

manual(
    "orders.reconcile-day",
    job=reconcile_orders,
    runs_where=("local", "production"),
    guard=lambda actor, now: actor in DEMO_OPERATORS or "only the demo operators (admin, ops)",
    description='Reconcile one day by hand after a data repair: --args \'{"day": "2026-03-01"}\'',
)
