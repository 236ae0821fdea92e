"""``manage.py runscheduler``: sync schedules, elect a leader, plan occurrences until SIGTERM.

Run two or more replicas (any hosts) for failover: one leads and plans, the others take
over within ``LITEJOBS["SCHEDULER_LEASE"]`` when it stops or dies. Workers run the jobs.
"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from ...runtime.startup import prepare
from ...scheduling.scheduler import Scheduler


class Command(BaseCommand):
    help = "Plan litejobs schedules: sync declarations, lead through a lease, enqueue occurrences."

    def handle(self, *args: Any, **options: Any) -> None:
        if not prepare(self, "runscheduler"):
            return
        code = Scheduler().run()
        if code:
            raise CommandError(f"scheduler exited with {code}", returncode=code)
