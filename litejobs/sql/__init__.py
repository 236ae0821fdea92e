"""Named SQL the ORM cannot express (claims, fenced transitions, heartbeats).

Every query lives in ``queries.sql`` under a ``-- name: <query>`` line. ``{claimable}``,
``{live}``, ``{terminal}`` and ``{finished_occurrences}`` expand to the state lists of
``litejobs.core.enums``; ``{db_now}`` to the instant lease arithmetic runs at (the
``db_now`` parameter, from ``litejobs.clock.lease_instant()``: NULL means the database's own
clock). Values are always bound parameters (``%(name)s``).
"""

import re
from functools import cache
from importlib.resources import files

from ..core.enums import CLAIMABLE, LIVE, OCCURRENCE_FINISHED, TERMINAL, UNCLAIMABLE, sql_list

#: Leases are written and compared on the database's clock unless a test clock supplies it.
DB_NOW = "COALESCE(%(db_now)s::timestamptz, statement_timestamp())"

_NAME = re.compile(r"^-- name: ([a-z_]+)\s*$", re.MULTILINE)


@cache
def queries() -> dict[str, str]:
    """Every named query, with the state lists filled in."""
    text = files(__package__).joinpath("queries.sql").read_text(encoding="utf-8")
    parts = _NAME.split(text)[1:]
    states = {
        "claimable": sql_list(CLAIMABLE),
        "unclaimable": sql_list(UNCLAIMABLE),
        "live": sql_list(LIVE),
        "terminal": sql_list(TERMINAL),
        "finished_occurrences": sql_list(OCCURRENCE_FINISHED),
        "db_now": DB_NOW,
    }
    bodies = zip(parts[::2], parts[1::2], strict=True)
    return {name: _fill(body.strip(), states) for name, body in bodies}


def _fill(body: str, states: dict[str, str]) -> str:
    for placeholder, values in states.items():
        body = body.replace("{" + placeholder + "}", values)
    return body


def query(name: str) -> str:
    """The SQL of the named query."""
    return queries()[name]
