from django.apps import AppConfig


class ReleaseConfig(AppConfig):
    """Two releases of one app's jobs, for rolling-deploy tests (see jobs.py)."""

    name = "tests.release"
    label = "release"
