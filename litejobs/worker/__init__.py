"""The ``runworker`` runtime: ``Worker`` runs jobs in threads; ``Supervisor`` runs workers in
processes (``--pool processes``)."""

from .process import Worker
from .supervisor import Supervisor

__all__ = ["Supervisor", "Worker"]
