"""litejobs' Django app: the glue between Django and litejobs' features.

When Django is ready it registers the checks, keeps ``runworker``, ``runscheduler`` and
``runrelay`` litejobs' whatever the order of apps, declares litejobs' own jobs and schedule
(webhook delivery, bulk money items, housekeeping), wires what the features add into each
other, and imports every installed app's declaration modules (``jobs.py``, ``workflows.py``,
``schedules.py``, ``queues.py``).
"""

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
        from .models import WebhookEndpoint
        from .scheduling import housekeeping  # noqa: F401 - litejobs' own daily schedule
        from .webhooks import delivery, endpoints  # noqa: F401 - the webhook delivery job

        pin_runtime_commands()
        setting_changed.connect(clock.forget_configured_clock)
        WebhookEndpoint.rules = staticmethod(endpoints.check_endpoint_fields)
        from . import bulk  # noqa: F401 - declares the job that executes bulk money items

        if extras.installed("django.tasks") or extras.installed("django_tasks"):
            from . import tasks  # noqa: F401 - runs the stored rows of Django tasks

        catalog.autodiscover()
        queues.autodiscover()  # work queues (after jobs and schedules)
