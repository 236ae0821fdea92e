"""The test settings without LOGGING (Django's default logging: nothing for litejobs)."""

from tests.settings import *  # noqa: F403

del LOGGING  # noqa: F821
