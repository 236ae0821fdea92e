"""The models and the migrations agree."""

import io

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_no_model_change_lacks_a_migration():
    out = io.StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out)
    except SystemExit:  # makemigrations --check exits non-zero when a migration is missing
        pytest.fail(f"a model change has no migration:\n{out.getvalue()}")
    assert "No changes detected" in out.getvalue()
