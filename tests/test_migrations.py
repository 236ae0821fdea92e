"""The models and the migrations agree, and every named SQL query is used."""

import re
from pathlib import Path

import pytest
from django.core.management import call_command

from litejobs.sql import queries

PACKAGE = Path(__file__).resolve().parent.parent / "litejobs"


@pytest.mark.django_db
def test_no_model_change_lacks_a_migration():
    # makemigrations --check exits non-zero when a migration is missing.
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


def test_every_named_query_is_used_by_the_code():
    code = "\n".join(
        path.read_text() for path in PACKAGE.rglob("*.py") if "migrations" not in path.parts
    )
    used = set(re.findall(r"(?:query\(|run_query\(\s*cursor,\s*)\"([a-z_]+)\"", code))
    assert set(queries()) == used
