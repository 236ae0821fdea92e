"""A report requested from the admin in a real browser, written by a real worker and
downloaded through its signed link; another tenant's staff user is refused the same link.

The web server (``manage.py runserver``, as ``make demo`` runs it) and the worker are separate
processes sharing the test database and one media directory; the browser is Debian's chromium
driven by Playwright. The pages are saved under ``.litejobs/screenshots/``.
"""

from __future__ import annotations

from litejobs.models import ReportRun
from tests.browser.conftest import BROWSER_MARKS, CHROMIUM, CHROMIUM_ARGS, start_web
from tests.conftest import ROOT, wait_for
from tests.reports_helpers import RANGE, reader, sales

SHOTS = ROOT / ".litejobs" / "screenshots"

pytestmark = BROWSER_MARKS


def staff(username: str, tenant: str):
    from django.contrib.auth.models import Permission

    user = reader(username, tenant)
    user.set_password(username)
    user.save()
    user.user_permissions.add(Permission.objects.get(codename="view_reportrun"))
    return user


def sign_in(browser, base: str, username: str):
    page = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    page = page.new_page()
    page.goto(f"{base}/admin/login/?next=/admin/litejobs/reportrun/")
    page.fill("#id_username", username)
    page.fill("#id_password", username)
    page.click("input[type=submit]")
    page.wait_for_selector("#changelist", timeout=15_000)
    return page


def test_a_staff_user_exports_from_the_admin_and_another_tenants_cannot_download_it(
    processes, tmp_path, monkeypatch
):
    monkeypatch.setenv("LITEJOBS_TEST_MEDIA_ROOT", str(tmp_path))
    staff("ann", "north")
    staff("bob", "south")
    sales("north", 23, note="=HYPERLINK(1)")
    base = start_web(processes, "web")
    processes.worker("--queues", "reports")
    SHOTS.mkdir(parents=True, exist_ok=True)

    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            anns = sign_in(browser, base, "ann")
            anns.click("text=Request a report")
            anns.click("a:text-is('tests.sales')")
            anns.fill("#id_start", RANGE["start"])
            anns.fill("#id_end", RANGE["end"])
            anns.fill("#id_status", "paid")
            anns.screenshot(path=str(SHOTS / "report-request.png"), full_page=True)
            anns.click("#report-request-form input[type=submit]")
            # The run's page reloads while the worker writes it, then offers the download.
            anns.wait_for_selector("#report-download", timeout=30_000)
            anns.screenshot(path=str(SHOTS / "report-run.png"), full_page=True)
            with anns.expect_download() as download:
                anns.click("#report-download")
            body = download.value.path().read_bytes().decode()
            link = anns.get_attribute("#report-download", "href")

            bobs = sign_in(browser, base, "bob")
            refused = bobs.goto(f"{base}{link}")
        finally:
            browser.close()

    lines = body.split("\r\n")
    assert lines[0] == "number,customer,amount,status,note,formula,placed"
    assert len(lines) == 2 + 12  # the header, 12 paid sales, the final line break
    assert all(",'=HYPERLINK(1)," in line for line in lines[1:-1])
    assert refused.status == 404
    run = ReportRun.objects.get()
    assert (run.state, run.row_count, run.requester_name) == ("done", 12, "ann")
    wait_for(lambda: run.audits.filter(outcome="downloaded").exists(), what="the audit row")
    assert not run.audits.filter(outcome="downloaded", user_name="bob").exists()


def test_an_expired_link_says_to_open_the_run_and_leads_there_at_both_widths_and_themes(
    processes,
):
    from datetime import timedelta

    from litejobs.core import clock
    from litejobs.models.reports import DownloadLink, link_url, sign_link
    from tests.testapp import reports

    ann = staff("ann", "north")  # may open the admin's report runs: the way back is a link
    sales("north", 23)
    run = reports.sales.request(user=ann, params=RANGE)
    expired = link_url(sign_link(DownloadLink(run.pk, "north", clock.now() - timedelta(1))))
    base = start_web(processes, "web")
    SHOTS.mkdir(parents=True, exist_ok=True)

    from playwright.sync_api import sync_playwright

    seen = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            for width, scheme in ((1440, "light"), (390, "dark")):
                context = browser.new_context(
                    viewport={"width": width, "height": 800}, color_scheme=scheme
                )
                page = context.new_page()
                page.goto(f"{base}/admin/login/?next={expired}")
                page.fill("#id_username", "ann")
                page.fill("#id_password", "ann")
                page.click("input[type=submit]")
                page.wait_for_selector("#report-link-way-back", timeout=15_000)
                page.screenshot(path=str(SHOTS / f"report-link-expired-{width}-{scheme}.png"))
                seen[width] = (
                    page.inner_text("#report-link-refusal"),
                    page.inner_text("#report-link-way-back"),
                    page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"),
                )
                page.click("#report-link-way-back a")
                page.wait_for_selector("#report-cancel, #content-main", timeout=15_000)
                seen[f"{width}-after"] = page.url
                context.close()
        finally:
            browser.close()

    for width in (1440, 390):
        refusal, way_back, fits = seen[width]
        assert "this one's time is over" in refusal and "report-link-expired" in refusal
        assert way_back == f"Open the run for a new link: report run #{run.pk}."
        assert fits, f"the page scrolls sideways at {width} px"
        assert seen[f"{width}-after"].endswith(f"/admin/litejobs/reportrun/{run.pk}/change/")
