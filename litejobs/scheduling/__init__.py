"""The scheduler: declarations (``schedule``), pure timetable maths, the ``runscheduler`` loop
and the runbook operations. See README "Schedules".

Modules: ``declarations`` (``schedule(...)`` and the registry), ``timetable`` (cron/every and
DST, pure), ``planning`` (misfire policies, pure), ``identity`` (occurrence keys),
``runs`` (enqueueing an occurrence's job), ``scheduler`` (the leader loop), ``operations``
(inspect, replay, disable/enable, overdue, retention), ``manual`` (jobs a person runs).
"""
