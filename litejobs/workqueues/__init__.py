"""Human work queues: rows of any model waiting for a person, worked in the admin.

``declarations`` (``work_queue``, ``@score_rule`` in each app's ``queues.py``); the API the
admin and user code share (``litejobs.workqueues``): ``commands`` (enqueue, claim, release,
resolve, cancel), ``acting`` (``act``: one of them on many items), ``listing`` (listing views,
keyset pages, counts), ``retention`` (``purge``) and ``errors`` (their refusals); ``admin`` (a
live page per queue), ``checks`` (litejobs.E010, E011), and the live pages' ``live`` (one LISTEN
per web process), ``sockets`` and ``routing`` (channels, ``litejobs[live]``: only these two
import it).
"""

from . import acting, commands, declarations, errors, listing, retention
from .acting import *  # noqa: F403
from .commands import *  # noqa: F403
from .declarations import *  # noqa: F403
from .errors import *  # noqa: F403
from .listing import *  # noqa: F403
from .retention import *  # noqa: F403

__all__ = [
    *declarations.__all__,
    *commands.__all__,
    *acting.__all__,
    *errors.__all__,
    *listing.__all__,
    *retention.__all__,
]
