"""litejobs' Django app: the glue between Django and litejobs' features.

When Django is ready it registers the checks, keeps ``runworker``, ``runscheduler`` and
``runrelay`` litejobs' whatever the order of apps, declares litejobs' own jobs and schedule
(webhook delivery, bulk money items, housekeeping) and the rule that an occurrence's job runs
again only by a replay, wires the add-ons in (the work queues' and bulk money actions' checks
and admin pages; the Django Tasks backend when Django Tasks is available), and imports every
installed app's declaration modules (``jobs.py``, ``workflows.py``, ``schedules.py``, then
``queues.py``, ``pipelines.py`` and ``reports.py``).
"""

from django.apps import AppConfig, apps


class LitejobsConfig(AppConfig):
    name = "litejobs"
    label = "litejobs"
    verbose_name = "litejobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core.signals import setting_changed

        from . import checks  # noqa: F401 - the checks register themselves
        from .bulk import checks as bulk_checks  # noqa: F401
        from .bulk import execution  # noqa: F401 - the job that pays bulk items
        from .conf import settings
        from .core import clock, extras
        from .ingest import checks as ingest_checks  # noqa: F401
        from .ingest import declarations as ingest
        from .ingest import jobs as ingest_jobs  # noqa: F401 - the drain and import jobs
        from .jobs import catalog
        from .management.precedence import pin_runtime_commands
        from .reports import checks as report_checks  # noqa: F401
        from .reports import declarations as reports
        from .reports import jobs as report_jobs  # noqa: F401 - the run job, the expiry schedule
        from .scheduling import (
            housekeeping,  # noqa: F401 - litejobs' own daily schedule
            operations,  # noqa: F401 - an occurrence's job reruns by replay only
        )
        from .webhooks import delivery  # noqa: F401 - the webhook delivery job
        from .workqueues import checks as workqueue_checks  # noqa: F401
        from .workqueues import declarations as workqueues

        pin_runtime_commands()
        if apps.is_installed("django.contrib.auth"):
            from django.db.models.signals import post_migrate

            from .management.roles import sync_read_only_group

            # After auth's own handler (connected first): the permissions exist by then.
            post_migrate.connect(sync_read_only_group, dispatch_uid="litejobs-read-only-group")
        setting_changed.connect(clock.forget_configured_clock)
        setting_changed.connect(settings.forget)
        if extras.installed("django.tasks") or extras.installed("django_tasks"):
            from .tasks import backend  # noqa: F401 - runs Django tasks' rows
        if apps.is_installed("django.contrib.admin"):
            from .bulk import admin as bulk_admin  # noqa: F401
            from .workqueues import admin as workqueue_admin  # noqa: F401

        catalog.autodiscover()
        workqueues.autodiscover()  # work queues (after jobs and schedules)
        ingest.autodiscover()  # pipelines (after jobs)
        reports.autodiscover()  # reports

    def declared_topic_names(self) -> list[str]:
        """The outbox's declared topics, by name: a webhook endpoint's record validates its
        topics by them, and sits below the outbox, so it asks the app."""
        from .outbox.topics import declared_topics

        return [topic.name for topic in declared_topics()]
