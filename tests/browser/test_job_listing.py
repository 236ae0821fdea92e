"""The job listing in a real browser at 1440 px with the admin sidebar open: every column
shows beside the filter panel, none cut off at its edge; and an operator's way from the
dashboard's dead count through the filtered listing to a retry of every job it shows.

The pages are saved under ``.litejobs/screenshots/`` (the listing at 1440 and 390 px, the bulk
page)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs, urlsplit

from django.db import connections

from litejobs import clock
from litejobs.models import Job, JobState, OperatorAction, OperatorVerb
from tests.browser.conftest import BROWSER_MARKS, CHROMIUM, CHROMIUM_ARGS, signed_in_page, start_web
from tests.conftest import ROOT
from tests.factories import JobFactory, QueueStateFactory, UserFactory

SHOTS = ROOT / ".litejobs" / "screenshots"

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
    # Words that cannot break where a space would let them: a queue paused with a pasted
    # link as its reason (shown in "waiting because"), a long queue name, a CamelCase name.
    QueueStateFactory(
        name="webhooks_priority_high_eu_west",
        reason="https://status.example.com/incidents/" + "0123456789abcdef" * 8,
    )
    JobFactory(name="orders.charge", state=JobState.FAILED, run_at=clock.now(), label="due")
    JobFactory(
        name="orders.AskTheWarehouseToShipTheParcelNow",
        queue="webhooks_priority_high_eu_west",
        attempts=9,
        max_attempts=10,
    )
    base = start_web(processes, "web")
    SHOTS.mkdir(parents=True, exist_ok=True)

    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = signed_in_page(browser, base, "/admin/litejobs/job/")
            page.wait_for_selector("#result_list", timeout=15_000)
            found = page.evaluate(MEASURE)
            page.screenshot(path=str(SHOTS / "job-listing-1440.png"), full_page=False)
        finally:
            browser.close()
    assert found["sidebar"] > 200, found  # the admin's sidebar is open
    assert found["hidden"] <= 0 and found["table_right"] <= found["filter_left"], found


def off_the_loop(read):
    """A database read on a thread of its own (Playwright's loop runs on this one)."""

    def run():
        try:
            return read()
        finally:
            connections.close_all()

    with ThreadPoolExecutor(1) as reader:
        return reader.submit(run).result()


#: The queue table's dead count of the default queue (the sixth count: ready, scheduled,
#: running, waiting, failed, dead).
DEAD_COUNT = '#dashboard-queues tr[data-queue="default"] td.count >> nth=5'


def test_an_operator_retries_every_dead_job_from_the_dashboards_dead_count(processes):
    UserFactory(username="admin", is_superuser=True)
    dead = [
        JobFactory(
            name="orders.ask_warehouse_to_ship",
            state=JobState.DEAD,
            label=f"d{i}",
            error_class="litejobs.exceptions.Permanent",
            error_message="the carrier refused the parcel: it weighs more than 30 kg",
        )
        for i in range(3)
    ]
    elsewhere = JobFactory(state=JobState.DEAD, queue="emails", label="mail")
    JobFactory(state=JobState.READY, label="ready")
    base = start_web(processes, "web")
    SHOTS.mkdir(parents=True, exist_ok=True)

    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = signed_in_page(browser, base, "/admin/litejobs/")
            page.wait_for_selector(DEAD_COUNT, timeout=15_000)
            assert page.inner_text(DEAD_COUNT).strip() == "3"
            page.click(f"{DEAD_COUNT} >> a")
            page.wait_for_selector("#result_list", timeout=15_000)

            # The listing's own filters: the panel shows them chosen, the rows are the three.
            query = parse_qs(urlsplit(page.url).query)
            assert query == {"state__exact": ["dead"], "queue": ["default"]}, page.url
            for title, shown in (("state", "Dead"), ("queue", "default")):
                chosen = f'#changelist-filter details[data-filter-title="{title}"] li.selected'
                assert page.inner_text(chosen).strip() == shown
            assert page.locator("#result_list tbody tr").count() == 3
            found = page.evaluate(MEASURE)
            assert found["hidden"] <= 0 and found["table_right"] <= found["filter_left"], found
            page.screenshot(path=str(SHOTS / "job-listing-dead.png"), full_page=True)

            page.click("#bulk-over-filter")
            page.wait_for_selector("#bulk-form", timeout=15_000)
            assert page.inner_text("#bulk-matching").strip() == "3"
            page.select_option("#id_verb", "retry")
            page.fill("#id_reason", "the carrier raised its weight limit")
            page.screenshot(path=str(SHOTS / "job-bulk.png"), full_page=True)
            page.click("#bulk-form input[type=submit]")
            page.wait_for_selector("#result_list, #jobs-empty", timeout=15_000)
            said = page.inner_text("ul.messagelist")
            assert "Retry: 3 jobs changed; no matching job remains." in said, said

            page.goto(f"{base}/admin/litejobs/operatoraction/")
            on = page.inner_text("#result_list tbody tr:first-child td.field-target")
            ids = ", ".join(str(job.pk) for job in dead)
            assert on == f"state dead; queue default; limit 100; jobs {ids}", on

            narrow = browser.new_context(
                viewport={"width": 390, "height": 844}, storage_state=page.context.storage_state()
            ).new_page()
            narrow.goto(f"{base}/admin/litejobs/job/?state__exact=dead")
            narrow.wait_for_selector("#result_list", timeout=15_000)
            narrow.screenshot(path=str(SHOTS / "job-listing-390.png"), full_page=True)
        finally:
            browser.close()

    states = off_the_loop(lambda: dict(Job.objects.values_list("pk", "state")))
    assert [states[job.pk] for job in dead] == [JobState.READY] * 3
    assert states[elsewhere.pk] == JobState.DEAD
    row = off_the_loop(lambda: OperatorAction.objects.select_related("user").get())
    assert (row.verb, row.user.username, row.affected) == (OperatorVerb.RETRY, "admin", 3)
    assert row.job_ids == [job.pk for job in dead]
    assert row.reason == "the carrier raised its weight limit"
