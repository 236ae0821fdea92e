"""A pipelines.py whose pipeline lists a step marked neither drop nor enrich (litejobs.E071)."""

import enum

from litejobs import pipeline


class Reason(enum.Enum):
    POISON = "poison"


def unmarked(record):
    return record


pipeline("bad.unmarked", steps=[unmarked], drop_reasons=Reason, key=str, sink=print)
