"""Prometheus metrics of litejobs (needs ``litejobs[metrics]``): ``collector`` (the gauges, read
from the database at scrape time) and ``views`` (``metrics``, the endpoint)."""
