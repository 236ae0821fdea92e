"""The lowest layer: what every feature of litejobs builds on, knowing none of them.

``clock`` (the one place time is read), ``durations``, ``payloads`` (JSON encoding, redaction,
the ``Scrubber``), ``retry`` (policies, pure maths), ``tracing``, ``otel``, ``logs`` (the JSON
log formatter), ``spelling`` ("did you mean"), ``enums`` (every closed set), ``errors`` (the
base errors), ``registry`` (the one registry type every declaration kind uses), ``diagnostics``
(the one ``Problem``), ``remedies`` (the words and actions the dashboard offers beside one),
``features`` (what each feature contributes to the parts that serve them all), ``sql`` (the
named-statement loader), ``discovery`` (importing every app's declaration modules),
``project`` (the project's ``LITEJOBS``), ``extras`` (the optional packages), ``times``,
``sizes`` and ``histogram``.

No module here imports anything of litejobs above the core, nor names any of it: a feature's
rule lives in its feature (the outbox's topics, the webhooks' address policy, a report's
download link, a job's key), and the only paths the core spells are the ones that publish it
(``litejobs.conf``, ``litejobs.exceptions``, ``litejobs.clock``, ``litejobs.logging``,
``litejobs.tracing``). ``tests/unit/test_layout.py`` holds both.
"""
