"""Durable settle hooks: ``@job(on_settled=hook)`` calls ``hook(settled)`` once per ending of a
run — done, dead, cancelled (before it ran too) or dropped — never on a retry, a suspension or
a hand-back. The call is written in the statement that writes the ending (a trigger of the job
table inserts a ``litejobs.settled`` job), so a worker killed between the two never loses it;
it then rides the queue: its own timeout and retries, under the job's tenant, at least once.
"""

from ..core.enums import SettleOutcome
from .settled import Settled, SettledError

__all__ = ["SettleOutcome", "Settled", "SettledError"]
