"""The system checks of reports: a refused declaration, a report that cannot run (no paging,
no audit, a permission no model defines), one without its recorded need and a report setting
that cannot work are each named with their id and code."""

from __future__ import annotations

import pytest
from django.test import override_settings

from litejobs import Audit, Need, Paging, report
from litejobs.reports import declarations
from litejobs.reports.checks import check_report_settings, check_reports


@pytest.fixture
def declared():
    """Declare reports on the fly; they are forgotten afterwards."""
    names = []

    def declare(name, **options):
        names.append(name)
        return report(name, columns=["number"], query=lambda params, tenant: None, **options)

    yield declare
    for name in names:
        declarations.reports.unregister(name)


def messages_about(name):
    return {message.id: message.msg for message in check_reports() if message.obj == name}


def test_a_report_that_cannot_run_or_records_no_need_is_named_with_its_code(declared):
    declared("tests.bare", permission="testapp.export_nothing")
    assert messages_about("tests.bare") == {
        "litejobs.E081": "[report-paging-missing] Report 'tests.bare' declares no paging; it "
        "refuses every request until it does.",
        "litejobs.E082": "[report-audit-missing] Report 'tests.bare' declares no audit; it "
        "refuses every request until it does.",
        "litejobs.E083": "[report-permission-unknown] Report 'tests.bare' needs the permission "
        "'testapp.export_nothing', which no installed model defines.",
        "litejobs.W080": "[report-need-missing] Report 'tests.bare' does not record the need "
        "it answers.",
    }
    declared(
        "tests.complete",
        paging=Paging.pages(size=10),
        audit=Audit(reason="a test", target="sales"),
        permission="testapp.view_sale",
        need=Need(volume=10, latency_target="1m", max_result=10, operator="tests"),
    )
    assert messages_about("tests.complete") == {}


def test_a_refused_declaration_is_a_check_error_not_a_crash():
    with override_settings(INSTALLED_APPS=["litejobs", "tests.badreports"]):
        declarations.autodiscover()
        [error] = [m for m in check_reports() if m.id == "litejobs.E080"]
    declarations.autodiscover()  # back to the real apps
    assert error.msg.startswith("tests.badreports.reports: [report-invalid] Report 'bad.format'")
    assert "format= is one of csv, ndjson" in error.msg
    assert [m for m in check_reports() if m.id == "litejobs.E080"] == []


def test_a_report_queue_or_storage_that_cannot_work_is_a_check_error(settings):
    settings.LITEJOBS = {"REPORT_QUEUE": "no spaces allowed", "REPORT_STORAGE": "nowhere"}
    errors = check_report_settings()
    assert [error.id for error in errors] == ["litejobs.E084", "litejobs.E084"]
    assert "REPORT_QUEUE" in errors[0].msg
    assert errors[1].msg.startswith("[settings-invalid] LITEJOBS['REPORT_STORAGE']='nowhere'")
    settings.LITEJOBS = {}
    assert check_report_settings() == []
