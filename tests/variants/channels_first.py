"""The test settings with channels, daphne and an app shipping litejobs' command names all
listed before litejobs (channels' docs put their apps first)."""

from tests.settings import *  # noqa: F403

INSTALLED_APPS = [
    "channels",
    "daphne",
    "tests.shadowapp",
    *(app for app in INSTALLED_APPS if app != "daphne"),  # noqa: F405
]
