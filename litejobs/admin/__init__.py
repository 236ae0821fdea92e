"""The operator's admin: what every feature's admin pages share (``base``, ``reasons``,
``refusals``, ``charts``), the job queue's own pages (jobs, live workers, job queues, the
operator action log) and the dashboard. A feature's pages live in its package (its
``Feature.admin``, such as ``litejobs.reports.admin``); litejobs' app imports them when
Django's admin is installed.

Every change an operator makes here goes through the features' operator verbs
(``litejobs.jobs.operations``, ``litejobs.scheduling.operations``, ...), the same functions
``manage.py litejobs`` calls, so the admin and the CLI cannot disagree about a transition.
"""

from . import jobs, operators, queues, workers

__all__ = ["jobs", "operators", "queues", "workers"]
