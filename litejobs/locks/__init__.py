"""Fenced locks: one holder of a key across every host, for work outside the job queue.

``with litejobs.lock("digest:42", ttl="2m", wait="10s") as held:`` holds the key while the
block runs, renewed every third of the ttl; ``held.token`` (the fencing value) is greater than
any earlier holder's; a lost lock sets ``held.lost`` and makes the block's end raise
``LockLost``; a holder that died frees the key when its ttl lapses. ``locking`` (``lock``, the
wait), ``holding`` (``HeldLock``: renewal, release, the fenced ``update``), ``connections``
(the locks' own connections), ``operations`` (the locks as operators see them), ``retention``
and ``metrics``. This package's face is the API users call.
"""

from .errors import LockLost, LockWaitTimeout
from .holding import HeldLock
from .locking import lock

__all__ = ["HeldLock", "LockLost", "LockWaitTimeout", "lock"]
