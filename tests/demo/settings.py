"""Settings of the demo project's own tests (``tests/demo/``): the demo's settings, with a test
database of their own and fast password hashing. They run in a pytest session of their own
(``pytest --ds tests.demo.settings``), as a process has one settings module."""

import os
import tempfile

from project.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
LOGGING["loggers"]["litejobs"]["level"] = os.environ.get("LITEJOBS_LOG_LEVEL", "WARNING")  # noqa: F405

# A test database of its own, beside the library's (LITEJOBS_TEST_DB names that one when several
# runs share a server).
_default = DATABASES["default"]  # noqa: F405
_library_test_database = os.environ.get("LITEJOBS_TEST_DB") or f"test_{_default['NAME']}"
_default["TEST"] = {"NAME": f"{_library_test_database}_demo"}

# Files the demo's tests save (the vendor catalog's CSV), never in the demo's own media folder.
MEDIA_ROOT = os.path.join(tempfile.gettempdir(), "litejobs-demo-test-media")
