"""System checks of declarations: a broken app module is a coded message, not a crash."""

import pytest
from django.test import override_settings

from litejobs.checks import check_declarations
from litejobs.jobs import catalog as registry


@pytest.mark.django_db
def test_a_jobs_module_with_a_keyless_job_is_reported_not_crashing_startup():
    with override_settings(INSTALLED_APPS=["litejobs", "tests.badapp"]):
        registry.autodiscover()
        [error] = check_declarations()
    registry.autodiscover()  # back to the real apps
    assert error.id == "litejobs.E002"
    assert "tests.badapp.jobs" in error.msg and "has_no_key" in error.msg
    assert "key=" in error.msg
    assert check_declarations() == []


@pytest.mark.django_db
def test_a_module_imported_again_after_a_failed_import_reports_only_the_real_error():
    with override_settings(INSTALLED_APPS=["litejobs", "tests.badrepeat"]):
        registry.autodiscover()
        errors = check_declarations()
    registry.unregister("badrepeat.fine")
    registry.autodiscover()  # back to the real apps
    assert [(e.id, e.obj) for e in errors] == [("litejobs.E002", "tests.badrepeat.jobs")]
    assert "job-duplicate" not in errors[0].msg and "keyless" in errors[0].msg
