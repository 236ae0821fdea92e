from litejobs import schedule

from .jobs import tick

schedule(
    "noextras.tick",
    job=tick,
    every="1s",
    misfire="skip",
    operating_owner="the tests",
    record_owner="the tests",
)
