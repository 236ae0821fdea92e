"""Every named SQL query is used by the code."""

import re

from litejobs.sql import queries
from tests.conftest import ROOT

PACKAGE = ROOT / "litejobs"


def test_every_named_query_is_used_by_the_code():
    code = "\n".join(
        path.read_text() for path in PACKAGE.rglob("*.py") if "migrations" not in path.parts
    )
    used = set(re.findall(r"(?:query\(|run_query\(\s*cursor,\s*)\"([a-z_]+)\"", code))
    assert set(queries()) == used
