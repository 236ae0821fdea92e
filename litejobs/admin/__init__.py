"""The operator's admin: jobs, live workers, job queues, schedules, the outbox and webhooks,
ingest pipelines, reports and exports, one module per model group. (The work-queue and bulk
money action pages are the add-ons'; litejobs' app registers them when the admin is
installed.)

Every change an operator makes here goes through the features' operator verbs
(``litejobs.jobs.operations``, ``litejobs.scheduling.operations``, ...), the same functions
``manage.py litejobs`` calls, so the admin and the CLI cannot disagree about a transition.
"""

from . import ingest, jobs, operators, outbox, queues, reports, schedules, workers

__all__ = [
    "ingest",
    "jobs",
    "operators",
    "outbox",
    "queues",
    "reports",
    "schedules",
    "workers",
]
