"""Add-ons of litejobs, each a package of its own that the core never imports (only litejobs'
app wires them in, and the old import paths re-export them).

``django_tasks`` (the Django Tasks backend), ``workqueues`` (human work queues: declarations,
the item API, the admin, live pages — channels, ``litejobs[live]``, only in the live
modules), ``bulk`` (bulk money actions confirmed with a TOTP code — django-otp,
``litejobs[otp]``) and ``metrics`` (the Prometheus collector and view — prometheus-client,
``litejobs[metrics]``).
"""
