"""``manage.py`` of the project without litejobs' extras: the optional packages are
unimportable here, whatever the environment has installed."""

import os
import sys
from importlib.abc import MetaPathFinder
from pathlib import Path

#: litejobs[live] (channels, daphne), [otp] (django-otp, segno), [metrics] (prometheus-client),
#: [otel] (opentelemetry).
MISSING = {"channels", "daphne", "django_otp", "segno", "prometheus_client", "opentelemetry"}


class NotInstalled(MetaPathFinder):
    """Refuses the optional packages as if they were not installed."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in MISSING:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


if __name__ == "__main__":
    sys.meta_path.insert(0, NotInstalled())
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.no_extras.settings"
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
