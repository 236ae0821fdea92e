"""How the bench plugs into litejobs (``litejobs.core.features``): its verb, ``manage.py
litejobs bench``, and nothing else (its jobs are declared in the bench's own processes)."""

from ..core.features import Feature

feature = Feature("bench", verbs=f"{__package__}.cli")
