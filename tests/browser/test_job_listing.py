"""The job listing in a real browser at 1440 px with the admin sidebar open: every column
shows beside the filter panel, none cut off at its edge."""

from __future__ import annotations

from litejobs.models import JobState
from tests.browser.conftest import BROWSER_MARKS, CHROMIUM, CHROMIUM_ARGS, signed_in_page, start_web
from tests.factories import JobFactory, UserFactory

pytestmark = BROWSER_MARKS

#: The table's overflow beside the filter panel, and where the two boxes meet (px).
MEASURE = """() => {
  const box = document.querySelector('#changelist-form .results');
  const table = document.querySelector('#result_list');
  const filter = document.querySelector('#changelist-filter');
  return {
    hidden: table.scrollWidth - box.clientWidth,
    table_right: table.getBoundingClientRect().right,
    filter_left: filter.getBoundingClientRect().left,
    sidebar: document.querySelector('#nav-sidebar').getBoundingClientRect().width,
  };
}"""


def test_every_column_of_the_job_listing_shows_beside_the_filter_panel(processes):
    UserFactory(username="admin", is_superuser=True)
    for name in ("orders.ask_warehouse_to_ship", "litejobs.webhook_delivery"):
        JobFactory(name=name, queue="webhooks", state=JobState.DONE, attempts=1, max_attempts=10)
    JobFactory(
        name="orders.run_checkout",
        state=JobState.DEAD,
        error_class="litejobs.exceptions.Permanent",
        error_message="the carrier refused the parcel: it weighs more than 30 kg",
    )
    # A seven-digit id: a listing over a million jobs still fits.
    JobFactory(name="orders.send_receipt", state=JobState.SCHEDULED, id=1234567)
    base = start_web(processes, "web")

    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = signed_in_page(browser, base, "/admin/litejobs/job/")
            page.wait_for_selector("#result_list", timeout=15_000)
            found = page.evaluate(MEASURE)
        finally:
            browser.close()
    assert found["sidebar"] > 200, found  # the admin's sidebar is open
    assert found["hidden"] <= 0 and found["table_right"] <= found["filter_left"], found
