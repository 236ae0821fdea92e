"""Human work queues: rows of any model waiting for a person, worked in the admin.

``declarations`` (``work_queue``, ``@score_rule`` in each app's ``queues.py``), ``items`` (the
API the admin and user code share: enqueue, claim, release, resolve, listings), ``admin`` (a
live page per queue), ``checks`` (litejobs.E010, E011), and the live pages' ``live`` (one
LISTEN per web process), ``consumers`` and ``routing`` (channels, ``litejobs[live]``: only
these two import it).
"""
