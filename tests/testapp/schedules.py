"""Schedules of the test app: the per-second schedule real ``runscheduler`` processes run, and a
manual job only the test operators may run."""

from litejobs import manual, schedule

from .jobs import reconcile, tick

#: Who may run ``tests.reconcile-day`` by hand.
OPERATORS = frozenset({"admin", "ops"})

schedule(
    "tests.tick",
    job=tick,
    every="1s",
    misfire="run_all",
    max_catchup=120,
    overlap="forbid",
    timeout="1s",
    retention="1d",
    operating_owner="litejobs test suite",
    record_owner="litejobs test suite",
    status="active",
)

manual(
    "tests.reconcile-day",
    job=reconcile,
    runs_where=("local", "production"),
    guard=lambda actor, now: actor in OPERATORS or "only the test operators (admin, ops)",
    description='Reconcile one day by hand: --args \'{"day": "2026-03-01"}\'',
)
