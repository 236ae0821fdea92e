"""The lowest layer: what every feature of litejobs builds on, knowing none of them.

``clock`` (the one place time is read), ``durations``, ``payloads`` (JSON encoding, redaction,
the ``Scrubber``), ``retry`` (policies, pure maths), ``tracing``, ``spelling`` ("did you mean"),
``enums`` (every closed set), ``errors`` (the base errors), ``registry`` (the one registry type
every declaration kind uses), ``diagnostics`` (the one ``Problem``), ``remedies`` (the words and
actions the dashboard offers beside one), ``features`` (what each feature contributes to the
parts that serve them all), ``sql`` (the named-statement loader), ``discovery`` (importing every
app's declaration modules) and ``extras`` (the optional packages). Nothing here imports a
feature package.
"""
