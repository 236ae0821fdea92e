"""litejobs' named SQL: what the ORM cannot express (claims, fenced transitions, heartbeats,
conditional claims of work items), one file per feature family, and how it runs.

Each ``.sql`` file here holds statements under ``-- name: <statement>`` lines (``jobs.sql``,
``leases.sql``, ``leadership.sql``, ``steps.sql``, ``scheduling.sql``, ``outbox.sql``,
``webhooks.sql``, ``workqueues.sql``, ``waiting.sql``); a name is used by exactly one
function. ``{claimable}``,
``{unclaimable}``, ``{live}``, ``{terminal}``, ``{finished_occurrences}``, ``{live_items}``
and ``{finished_items}`` expand to the state lists of ``litejobs.core.enums``; ``{db_now}`` to
the instant lease arithmetic runs at (the ``db_now`` parameter, from
``litejobs.clock.lease_instant()``: NULL means the database's own clock). Values are always
bound parameters (``%(name)s``). How they run — the cursors, ``run_query`` and reading rows by
column name — is ``cursors``.

A claimed job is addressed as ``id = … AND fence = … AND state COLLATE "C" = 'running'``.
The collation changes nothing in what matches, but it keeps the planner from proving the
partial indexes' predicates (the live key's, the leases') from the condition, so the lookup
always goes through the primary key: statistics taken while the table held only finished
jobs call those indexes empty, and a plan through one then walks every live job.
"""

from __future__ import annotations

from ..core.enums import (
    CLAIMABLE,
    FINISHED_ITEM,
    LIVE,
    LIVE_ITEM,
    OCCURRENCE_FINISHED,
    TERMINAL,
    UNCLAIMABLE,
    sql_list,
)
from ..core.sql import Statements

#: Leases are written and compared on the database's clock unless a test clock supplies it.
DB_NOW = "COALESCE(%(db_now)s::timestamptz, statement_timestamp())"


def _placeholders() -> dict[str, str]:
    return {
        "claimable": sql_list(CLAIMABLE),
        "unclaimable": sql_list(UNCLAIMABLE),
        "live": sql_list(LIVE),
        "terminal": sql_list(TERMINAL),
        "finished_occurrences": sql_list(OCCURRENCE_FINISHED),
        "live_items": sql_list(LIVE_ITEM),
        "finished_items": sql_list(FINISHED_ITEM),
        "db_now": DB_NOW,
    }


_statements = Statements(__package__, _placeholders)


def queries() -> dict[str, str]:
    """Every named statement, with the state lists filled in."""
    return _statements.all


def query(name: str) -> str:
    """The SQL of the named statement."""
    return _statements[name]


def prepared() -> frozenset[str]:
    """The statements prepared server-side on a hot cursor (marked ``-- prepared``)."""
    return _statements.prepared
