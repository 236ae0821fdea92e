"""litejobs' Django app: the glue between Django and litejobs' features.

When Django is ready it registers the checks, keeps ``runworker``, ``runscheduler`` and
``runrelay`` litejobs' whatever the order of apps, and loads the features of ``FEATURES``
(``litejobs.core.features``): each one's ``feature.py`` registers its checks, jobs and
schedules, its admin pages when Django's admin is installed, and imports what every installed
app declares for it (``jobs.py``, ``workflows.py``, ``schedules.py``, then ``queues.py``,
``pipelines.py`` and ``reports.py``). An add-on that needs an extra (``OPTIONAL``) is loaded
only when the extra is installed.
"""

from django.apps import AppConfig, apps

#: litejobs' features, in the order ``doctor``, the metrics, housekeeping, the dashboard and
#: the autodiscovery read them: the job queue first, what builds on it after.
FEATURES = (
    "jobs",
    "hooks",
    "scheduling",
    "outbox",
    "webhooks",
    "workqueues",
    "bulk",
    "ingest",
    "reports",
    "locks",
    "batches",
    "rates",
    "bench",
)
#: Add-ons loaded only when one of the packages they need is installed.
OPTIONAL = {"tasks": ("django.tasks", "django_tasks")}


class LitejobsConfig(AppConfig):
    name = "litejobs"
    label = "litejobs"
    verbose_name = "litejobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core.signals import setting_changed

        from . import checks  # noqa: F401 - the checks register themselves
        from .conf import settings
        from .core import clock, extras, features
        from .management.precedence import pin_runtime_commands

        pin_runtime_commands()
        if apps.is_installed("django.contrib.auth"):
            from django.db.models.signals import post_migrate

            from .management.roles import sync_read_only_group

            # After auth's own handler (connected first): the permissions exist by then.
            post_migrate.connect(sync_read_only_group, dispatch_uid="litejobs-read-only-group")
        setting_changed.connect(clock.forget_configured_clock)
        setting_changed.connect(settings.forget)
        optional = [name for name, needs in OPTIONAL.items() if any(map(extras.installed, needs))]
        features.load(
            (f"{self.name}.{name}" for name in (*FEATURES, *optional)),
            admin=apps.is_installed("django.contrib.admin"),
        )
