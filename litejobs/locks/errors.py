"""The refusals of fenced locks, each with a stable ``code`` and a message naming the fix.

Each is a ``LitejobsError``; ``litejobs.locks`` (and ``litejobs``) export them beside
``lock``. A key, ttl or wait that cannot work is refused before anything is written, as an
``InvalidInput`` with the codes ``lock-key-invalid``, ``lock-ttl-invalid`` and
``lock-wait-invalid``.
"""

from ..core.errors import LitejobsError

__all__ = ["LockLost", "LockWaitTimeout"]


class LockWaitTimeout(LitejobsError, TimeoutError):
    """Another block held the key for the whole of ``wait=`` (or, with ``wait=0``, at the one
    try); the message names the holder and when its hold ends unless renewed. Nothing was
    written: try later, wait longer, or skip the work another process is doing."""

    code = "lock-wait-timeout"


class LockLost(LitejobsError):
    """The block's lock was lost while it ran: no renewal landed within its ttl (the process
    paused, the database was out of reach) or another block took the key over. The block's
    end raises it even when the body returned; a write carrying the block's token beside the
    data it changes is refused once a later holder wrote (``HeldLock.update``)."""

    code = "lock-lost"
