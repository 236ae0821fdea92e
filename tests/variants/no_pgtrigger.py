"""The test settings without "pgtrigger" in INSTALLED_APPS."""

from tests.settings import *  # noqa: F403

INSTALLED_APPS = [app for app in INSTALLED_APPS if app != "pgtrigger"]  # noqa: F405
