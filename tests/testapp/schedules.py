"""Schedules of the test app: the per-second schedule real ``runscheduler`` processes run."""

from litejobs import schedule

from .jobs import tick

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
