"""litejobs' Django app: loads every installed app's ``jobs.py``, registers the checks and keeps
``runworker``, ``runscheduler`` and ``runrelay`` litejobs' whatever the order of apps."""

from django.apps import AppConfig


class LitejobsConfig(AppConfig):
    name = "litejobs"
    label = "litejobs"
    verbose_name = "litejobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core.signals import setting_changed

        from . import checks, queues  # noqa: F401 - checks register themselves
        from .core import clock, extras
        from .jobs import catalog
        from .management.precedence import pin_runtime_commands

        pin_runtime_commands()

        setting_changed.connect(clock.forget_configured_clock)
        from . import (
            bulk,  # noqa: F401 - declares the job that executes bulk money items
            webhooks,  # noqa: F401 - declares the webhook delivery job
        )

        if extras.installed("django.tasks") or extras.installed("django_tasks"):
            from . import tasks  # noqa: F401 - runs the stored rows of Django tasks

        from .scheduling import housekeeping  # noqa: F401 - litejobs' own daily schedule

        catalog.autodiscover()
        queues.autodiscover()  # work queues (after jobs and schedules)
