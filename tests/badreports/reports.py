"""A reports.py whose report names a format litejobs does not write (litejobs.E080)."""

from litejobs import report

report("bad.format", columns=["number"], query=lambda params, tenant: None, format="xlsx")
