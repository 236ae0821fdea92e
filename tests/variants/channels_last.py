"""The test settings with channels and an app shipping litejobs' command names listed after
litejobs (daphne stays first: it must precede django.contrib.staticfiles)."""

from tests.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "channels", "tests.shadowapp"]  # noqa: F405
