"""Taking, checking and handing on a leader lease (``LeaderLease``: the scheduler, the relay).

Any number of replicas may run; the one holding a role's live lease does the role's work.
Each answer of :func:`lead` is the lease's fence, which the leader writes beside its work.
Expiry is written and compared on the database's clock (``litejobs.core.clock.lease_instant``), so
replicas on hosts whose clocks disagree still agree on who leads.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import connections

from ..core import clock
from ..core.enums import LeaderRole
from ..sql.cursors import Cursor, fetch_one, run_query
from .outage import is_outage


def lead(
    cursor: Cursor, role: LeaderRole, *, owner: str, host: str, pid: int, lease: timedelta
) -> int | None:
    """Take or renew the role's lease; its fence, or None while another process leads."""
    params = {
        "role": role,
        "owner": owner,
        "host": host[:255],
        "pid": pid,
        "lease": lease,
        "db_now": clock.lease_instant(),
    }
    run_query(cursor, "lead", params)
    row = fetch_one(cursor)
    fence: int | None = row["fence"] if row else None
    return fence


def still_leader(cursor: Cursor, role: LeaderRole, *, owner: str, fence: int) -> bool:
    """Inside a transaction: the lease is still ours, and stays so until it ends."""
    params = {"role": role, "owner": owner, "fence": fence, "db_now": clock.lease_instant()}
    run_query(cursor, "still_leader", params)
    return fetch_one(cursor) is not None


def resign(alias: str, role: LeaderRole, *, owner: str, logger: logging.Logger) -> None:
    """Hand the lease on at once (a clean stop); during an outage it just lapses."""
    try:
        with connections[alias].cursor() as cursor:
            params = {"role": role, "owner": owner, "db_now": clock.lease_instant()}
            run_query(cursor, "resign", params)
    except Exception as error:
        if not is_outage(error):
            raise
        logger.warning("%s stopped during an outage; its lease will lapse", role.label)
