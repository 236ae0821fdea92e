"""Settings of the test suite: the demo project plus a test app of jobs."""

import os

from project.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "tests.testapp"]  # noqa: F405
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Worker processes started by tests receive short leases through the environment.
LITEJOBS = {
    key: os.environ[f"LITEJOBS_{key}"]
    for key in ("LEASE", "HEARTBEAT", "POLL_INTERVAL", "TIMEOUT_GRACE", "ACK_FLUSH", "DRAIN_TIMEOUT")
    if f"LITEJOBS_{key}" in os.environ
}
if "LITEJOBS_ACK_BATCH" in os.environ:
    LITEJOBS["ACK_BATCH"] = int(os.environ["LITEJOBS_ACK_BATCH"])
LOGGING["loggers"]["litejobs"]["level"] = os.environ.get("LITEJOBS_LOG_LEVEL", "WARNING")  # noqa: F405
