"""litejobs' Django app: loads every installed app's ``jobs.py`` and registers the checks."""

from django.apps import AppConfig


class LitejobsConfig(AppConfig):
    name = "litejobs"
    label = "litejobs"
    verbose_name = "litejobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core.signals import setting_changed

        from . import checks, clock, queues, registry  # noqa: F401 - checks register themselves

        setting_changed.connect(clock.forget_configured_clock)
        from . import (
            bulk,  # noqa: F401 - declares the job that executes bulk money items
            webhooks,  # noqa: F401 - declares the webhook delivery job
        )

        registry.autodiscover()
        queues.autodiscover()  # work queues (after jobs and schedules)
