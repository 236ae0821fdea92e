"""The whole bulk money flow in a real browser: tick payouts, preview, type the TOTP code, see
every payout paid.

A real web server (``manage.py runserver``: daphne, as ``make demo`` runs it) and a real worker
serve the test database; the browser is Debian's chromium driven by Playwright. The code is
computed from the test device's key at the moment it is typed, as the finance phone shows it.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django_otp.plugins.otp_totp.models import TOTPDevice

from litejobs.models import BulkAction, BulkConfirmationAttempt
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, start_web
from tests.bulk_helpers import fresh_code, item_of, wrong_code
from tests.testapp.factories import FinanceFactory, PayoutFactory
from tests.testapp.models import Payout

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="needs Debian's chromium (.ci/run installs it: apt-get install chromium)",
    ),
]

FAST = {"LEASE": "3s", "HEARTBEAT": "1s", "POLL_INTERVAL": "1s"}


def off_the_loop(call):
    """Run a database call in its own thread: Playwright's sync API keeps an event loop running
    in this one, where Django refuses synchronous queries."""
    answer = []

    def run():
        try:
            answer.append(call())
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    return answer[0]


def let_the_throttle_pass(device: TOTPDevice) -> int:
    """django-otp makes a device wait a second after a wrong code; a person would wait it out."""
    return TOTPDevice.objects.filter(pk=device.pk).update(throttling_failure_timestamp=None)


def test_finance_releases_ticked_payouts_with_a_code_from_the_phone(processes):
    finance = FinanceFactory(
        username="fiona", permissions=("testapp.review_payout", "testapp.release_payout")
    )
    device = TOTPDevice.objects.get(user=finance)
    chosen = [
        PayoutFactory(amount="1900.00", currency="EUR", payee="Atelier Nord"),
        PayoutFactory(amount="800.50", currency="EUR", payee="Casa Verde"),
        PayoutFactory(amount="75.25", currency="USD", payee="Juniper Labs"),
    ]
    untouched = PayoutFactory(amount="42.00", currency="USD", payee="Harbor Tea Co.")
    items = {payout.pk: item_of(payout).pk for payout in [*chosen, untouched]}
    wrong = wrong_code(device)
    web = start_web(processes, "web")
    processes.worker("--concurrency", "2", **FAST)

    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_context().new_page()
            page.goto(f"{web}/admin/login/?next=/admin/litejobs/workitem/queue/payouts/")
            page.fill("#id_username", "fiona")
            page.fill("#id_password", "fiona")
            page.click("input[type=submit]")
            page.wait_for_selector("#wq-money")

            for payout in chosen:
                page.check(f"#item-{items[payout.pk]} input.action-select")
            page.click('button.wq-money-btn[data-action="payouts.release"]')

            # The preview: every ticked payout with its amount, the count, totals per currency.
            page.wait_for_selector("#bulk-confirm-form")
            assert page.inner_text("#bulk-count") == "3"
            for payout in chosen:
                line = page.inner_text(f"#bulk-line-{items[payout.pk]}")
                assert payout.payee in line and f"{payout.amount:,.2f}" in line
            assert page.locator(".bulk-total").all_inner_texts() == ["EUR 2,700.50", "USD 75.25"]
            assert page.locator(f"#bulk-line-{items[untouched.pk]}").count() == 0
            assert not off_the_loop(BulkAction.objects.exists)  # the preview moved nothing

            # A wrong code: refused on the page, nothing moved.
            page.fill("#bulk-code", wrong)
            page.click("#bulk-confirm")
            page.wait_for_selector("#bulk-error")
            assert page.get_attribute("#bulk-error", "data-code") == "bulk-code-invalid"
            assert "[bulk-code-invalid]" not in page.inner_text("#bulk-error")
            assert not off_the_loop(BulkAction.objects.exists)

            # The phone's current code, computed at the moment it is typed.
            off_the_loop(lambda: let_the_throttle_pass(device))
            page.fill("#bulk-code", off_the_loop(lambda: fresh_code(device)))
            page.click("#bulk-confirm")
            page.wait_for_selector('#bulk-action[data-status="succeeded"]', timeout=30_000)
            for payout in chosen:
                row = f"#bulk-item-{items[payout.pk]}"
                assert page.get_attribute(row, "data-state") == "succeeded"
                assert "Succeeded: paid" in page.inner_text(f"{row} .bulk-item-outcome")
            assert page.inner_text("#bulk-user") == "fiona"
            assert page.inner_text("#bulk-totals") == "EUR 2,700.50 · USD 75.25"
        finally:
            browser.close()

    record = BulkAction.objects.get()
    for payout in chosen:
        payout.refresh_from_db()
        assert (payout.state, payout.paid_by_bulk_action_id) == ("paid", record.pk)
    assert Payout.objects.get(pk=untouched.pk).state == "pending"
    results = list(BulkConfirmationAttempt.objects.order_by("id").values_list("result", flat=True))
    assert results == ["bulk-code-invalid", "confirmed"]
