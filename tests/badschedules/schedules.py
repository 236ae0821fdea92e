"""A schedules module with an invalid declaration, for the system check tests."""

from litejobs import schedule
from tests.testapp.jobs import scheduled_mark

schedule(
    "bad.cron",
    job=scheduled_mark,
    cron="61 2 * * *",
    misfire="skip",
    operating_owner="ops@example.com",
    record_owner="finance@example.com",
)
