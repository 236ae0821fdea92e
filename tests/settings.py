"""Settings of the test suite: the demo project plus a test app of jobs."""

import os

from litejobs.conf import DEFAULTS
from project.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "tests.testapp", "tests.outboxapp"]  # noqa: F405
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Worker processes started by tests receive their LITEJOBS settings through the environment.


def _from_environment(key: str, default):
    value = os.environ[f"LITEJOBS_{key}"]
    if isinstance(default, bool):
        return value.lower() in ("1", "true", "yes")
    return type(default)(value) if isinstance(default, int) else value


# Rolling-deploy tests start workers of an "old" and a "new" release of tests.release's jobs.
if os.environ.get("LITEJOBS_TEST_RELEASE"):
    INSTALLED_APPS = [*INSTALLED_APPS, "tests.release"]

LITEJOBS = {
    key: _from_environment(key, default)
    for key, default in DEFAULTS.items()
    if f"LITEJOBS_{key}" in os.environ
}
LOGGING["loggers"]["litejobs"]["level"] = os.environ.get("LITEJOBS_LOG_LEVEL", "WARNING")  # noqa: F405

# Several test runs may share one server: LITEJOBS_TEST_DB gives each its own test database.
if os.environ.get("LITEJOBS_TEST_DB"):
    DATABASES["default"]["TEST"] = {"NAME": os.environ["LITEJOBS_TEST_DB"]}  # noqa: F405
