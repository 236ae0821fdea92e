"""The models and the migrations agree."""

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_no_model_change_lacks_a_migration():
    # makemigrations --check exits non-zero when a migration is missing.
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)
