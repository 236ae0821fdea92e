"""An operator in a real browser: the dashboard's numbers move when a real worker finishes a
job (told live over its websocket), a dead job is retried and a scheduled one cancelled from
their own pages, and every action is in the operator action log.

The web server (``manage.py runserver``, as ``make demo`` runs it) and the worker are separate
processes sharing the test database; the browser is Debian's chromium driven by Playwright.
The pages are saved under ``.litejobs/screenshots/`` (the dashboard, a job's page with why it
waits, a work queue).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from django.db import connections

from litejobs import workqueues
from litejobs.models import Job, JobState, OperatorAction, OperatorVerb
from tests.browser.conftest import BROWSER_MARKS, CHROMIUM, CHROMIUM_ARGS, signed_in_page, start_web
from tests.conftest import ROOT, wait_for
from tests.factories import JobFactory, UserFactory
from tests.testapp.factories import DisputeFactory
from tests.testapp.jobs import record

SHOTS = ROOT / ".litejobs" / "screenshots"

pytestmark = BROWSER_MARKS

DONE_LEGEND = "#dashboard-charts li[data-series='done']"
LIVE = '#litejobs-dashboard[data-live-state="live"]'


def state_of(job_id: int) -> str:
    """The job's state, read on a thread of its own (Playwright's loop runs on this one)."""

    def read() -> str:
        try:
            return Job.objects.get(pk=job_id).state
        finally:
            connections.close_all()

    with ThreadPoolExecutor(1) as reader:
        return reader.submit(read).result()


def settled_done(page) -> str:
    """The first chart's legend entry for jobs done in the last hour ("done: N jobs")."""
    return page.locator(DONE_LEGEND).first.inner_text().strip()


def test_an_operator_watches_the_dashboard_and_acts_from_the_job_pages(processes):
    UserFactory(username="admin", is_superuser=True)
    dead = JobFactory(state=JobState.DEAD, label="dead", error_class="ValueError")
    later = JobFactory(state=JobState.SCHEDULED, label="later")
    record.enqueue(label="now")
    workqueues.enqueue_item("disputes", DisputeFactory(amount="1900", days=6))
    base = start_web(processes, "web")
    SHOTS.mkdir(parents=True, exist_ok=True)

    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = signed_in_page(browser, base, "/admin/litejobs/")
            page.wait_for_selector("#litejobs-dashboard", timeout=15_000)
            assert settled_done(page) == "done: 0 jobs"

            # Over daphne the page follows the server live: its periodic reload is then once a
            # minute, so seeing the job done sooner is the server's "changed" at work.
            page.wait_for_selector(LIVE, timeout=15_000)
            page.wait_for_timeout(1_500)  # the reload at the socket's opening is done

            # A worker finishes the ready job: the page, told it changed, shows it done.
            processes.worker()
            page.wait_for_function(
                f"document.querySelector(\"{DONE_LEGEND}\").innerText.trim() === 'done: 1 job'",
                timeout=30_000,
            )
            assert page.locator(LIVE).count() == 1  # still live: not the fallback's reloads
            page.screenshot(path=str(SHOTS / "dashboard.png"), full_page=True)

            # The scheduled job's page says why it waits; Cancel ends it.
            page.goto(f"{base}/admin/litejobs/job/{later.pk}/change/")
            assert "Waiting because" in page.inner_text("body")
            page.screenshot(path=str(SHOTS / "job-detail.png"), full_page=True)
            page.click("#job-cancel")
            page.wait_for_load_state()
            assert state_of(later.pk) == JobState.CANCELLED

            # The dead job is retried from its page, and the worker runs it.
            page.goto(f"{base}/admin/litejobs/job/{dead.pk}/change/")
            page.click("#job-retry")
            page.wait_for_load_state()
            wait_for(
                lambda: state_of(dead.pk) == JobState.DONE,
                timeout=30,
                what="the retried job to run",
            )

            page.goto(f"{base}/admin/litejobs/workitem/queue/disputes/")
            page.wait_for_selector('#wq-live[data-state="live"]', timeout=15_000)
            page.screenshot(path=str(SHOTS / "work-queue.png"), full_page=True)
        finally:
            browser.close()

    logged = OperatorAction.objects.order_by("at", "pk")
    assert [(a.verb, a.user.username, a.job_ids) for a in logged] == [
        (OperatorVerb.CANCEL, "admin", [later.pk]),
        (OperatorVerb.RETRY, "admin", [dead.pk]),
    ]
    for name in ("dashboard", "job-detail", "work-queue"):
        assert (SHOTS / f"{name}.png").stat().st_size > 10_000
