"""The ``runworker`` runtime.

``process`` (``Worker``: the main loop — leases, wake-ups, timeouts, the drain), ``claiming``
(the claim, and holding what it took), ``runner`` (the threads that run bodies, sharing a
``Crew`` with the process), ``outcome`` (how a run ends, and the pure failure decision),
``settling`` (the one place a run's ending is written, counted and logged), ``dispatch`` (the
shared claim buffer), ``handbacks`` (the jobs it handed back, left to other workers),
``holdings`` (held leases and the lease watch), ``acks`` (batched acknowledgements) and
``supervisor`` (``--pool processes``). Only ``process`` knows ``Worker``: it builds the
others and hands them down, and nothing they run calls back up into it.
"""

from .process import Worker
from .supervisor import Supervisor

__all__ = ["Supervisor", "Worker"]
