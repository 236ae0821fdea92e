"""The operator's admin: jobs, live workers and queues, one module per model group.

Every change an operator makes here goes through ``litejobs.operations``, the same functions
``manage.py litejobs`` calls, so the admin and the CLI cannot disagree about a transition.
"""

from . import bulk, jobs, outbox, queues, schedules, workers, workqueues

__all__ = ["bulk", "jobs", "outbox", "queues", "schedules", "workers", "workqueues"]
