"""What the tests over every litejobs admin page share: rows for each page to show (long ones
among them: a pause reason, an error, a host name), and the pages themselves."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import suppress

from django.contrib import admin
from django.db import transaction
from django.test import override_settings
from django.urls import NoReverseMatch, reverse

from litejobs import workqueues
from litejobs.jobs import operations, queues
from litejobs.models import JobState
from litejobs.outbox import stage
from litejobs.scheduling.scheduler import Scheduler
from litejobs.webhooks import create_endpoint
from tests.factories import JobFactory, UserFactory, WorkerFactory
from tests.testapp.factories import DisputeFactory

#: A pause reason longer than any table cell.
LONG_REASON = "The bank's settlement file arrived late; finance reconciles it by hand. " * 4


def seed_every_page() -> None:
    """A superuser ``admin`` (password ``admin``) and a row or two for every litejobs page."""
    admin_user = UserFactory(username="admin", is_superuser=True)
    for state in JobState.values:
        JobFactory(
            state=state,
            label=f"seeded-{state}",
            error_class="ValueError" if state in ("dead", "failed") else "",
            error_message="the card processor answered 502 " * 6 if state == "dead" else "",
        )
    dead = JobFactory(state=JobState.DEAD, label="retried", error_class="ValueError")
    operations.retry(dead.pk, by="admin", user_id=admin_user.pk)
    queues.pause("default", reason=LONG_REASON, by="admin", user_id=admin_user.pk)
    WorkerFactory(host="worker-host-with-a-long-name.eu-west-1.compute.example.internal")
    item = workqueues.enqueue_item("disputes", DisputeFactory(amount="1900", days=6))
    workqueues.claim(item.pk, admin_user)
    with transaction.atomic():
        stage("test.webhook-only", {"order": 7}, key="order:7")
    with override_settings(LITEJOBS={"WEBHOOK_ALLOWED_HOSTS": ["127.0.0.1"]}):
        create_endpoint("http://127.0.0.1:9/hooks", ["test.webhook-only"], description="CRM")
    planner = Scheduler(only=["tests.tick"], install_signals=False)
    planner.step()


def litejobs_pages() -> Iterator[str]:
    """Every litejobs admin page with something to show: the dashboard, each model's list
    and its first record's page, the queue overview, a work queue and the pipelines."""
    yield reverse("admin:app_list", kwargs={"app_label": "litejobs"})
    for model in admin.site._registry:
        if model._meta.app_label != "litejobs":
            continue
        info = model._meta.app_label, model._meta.model_name
        yield reverse("admin:{}_{}_changelist".format(*info))
        first = model._default_manager.order_by("pk").first()
        if first is not None:
            with suppress(NoReverseMatch):
                yield reverse("admin:{}_{}_change".format(*info), args=[first.pk])
    yield reverse("admin:litejobs_workitem_queue", kwargs={"queue": "disputes"})
