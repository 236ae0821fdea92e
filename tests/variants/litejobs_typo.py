"""The test settings with a misspelt LITEJOBS key."""

from tests.settings import *  # noqa: F403

LITEJOBS = {**LITEJOBS, "HEARTBEATS": "5s"}  # noqa: F405
