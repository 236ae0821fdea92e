"""The scheduler: declarations (``schedule``), pure timetable maths, the ``runscheduler`` loop
and the operator's verbs on schedules. See README "Schedules".

Modules: ``declarations`` (``schedule(...)`` and the registry; occurrences run with their
schedule's retry and timeout through the job catalog), ``timetable`` (cron/every and DST,
pure), ``planning`` (misfire policies, pure), ``identity`` (occurrence keys), ``runs``
(enqueueing an occurrence's job), ``scheduler`` (the leader loop), ``operations`` (inspect,
replay, disable/enable), ``health`` (overdue, the leader, doctor's schedule problems),
``retention`` (purging old occurrences), ``manual`` (jobs a person runs), ``housekeeping``
(litejobs' own daily purge schedule).
"""
