"""Every litejobs admin page in a real browser, at 1440 px and at 390 px, light and dark: no
page scrolls sideways (a wide table scrolls inside its own box), no list cuts its last columns
at 1440 px, a long pause reason keeps the queue table beside the sidebar, chart labels are
whole and at least 11 px, badges meet WCAG AA, and a refusal is a page of the admin.

The web server (``manage.py runserver``) serves the test database; the browser is Debian's
chromium driven by Playwright.
"""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from litejobs.models import JobState
from tests.admin_pages import litejobs_pages, seed_every_page
from tests.browser.conftest import (
    BROWSER_MARKS,
    CHROMIUM,
    CHROMIUM_ARGS,
    contrast,
    settled,
    start_web,
)
from tests.factories import JobFactory, UserFactory, counter_rows

pytestmark = BROWSER_MARKS

DASHBOARD = "/admin/litejobs/"
#: WCAG AA for text: 4.5:1.
AA = 4.5

#: Where the page is wider than the window (it scrolls sideways), and every table (with its
#: box: the element that would scroll it) whose last columns are cut off.
OVERFLOW_JS = """() => {
    const root = document.documentElement;
    const cut = [...document.querySelectorAll("#content table")].filter((table) => {
        let box = table.parentElement;
        while (box && getComputedStyle(box).overflowX === "visible") { box = box.parentElement; }
        return box && table.getBoundingClientRect().right > box.getBoundingClientRect().right + 1;
    }).map((table) => table.id || table.closest("[id]").id);
    return { page: root.scrollWidth - root.clientWidth, cut };
}"""

#: Each chart label: whether it lies inside its drawing, and its size on screen in pixels.
LABELS_JS = """() => [...document.querySelectorAll(".litejobs-chart > svg text")].map((text) => {
    const svg = text.ownerSVGElement.getBoundingClientRect();
    const box = text.getBoundingClientRect();
    const size = parseFloat(text.getAttribute("font-size")) * text.ownerSVGElement.getScreenCTM().a;
    const inside = box.left >= svg.left - 0.5 && box.right <= svg.right + 0.5;
    return { label: text.textContent, inside, size };
})"""


def _sign_in(browser, base: str, *, width: int, scheme: str = "light", user: str = "admin"):
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    page.goto(f"{base}/admin/login/?next={DASHBOARD}")
    page.fill("#id_username", user)
    page.fill("#id_password", user)
    page.click("input[type=submit]")
    page.wait_for_selector("#content")
    return page


def test_no_page_scrolls_sideways_at_390_px_and_no_list_cuts_columns_at_1440_px(processes):
    seed_every_page()
    pages = [*litejobs_pages(), reverse("admin:litejobs_workitem_queue", args=["nosuch"])]
    base = start_web(processes, "web")

    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            wrong = []
            for width in (1440, 390):
                page = _sign_in(browser, base, width=width)
                for path in pages:
                    page.goto(base + path)
                    settled(page)
                    found = page.evaluate(OVERFLOW_JS)
                    if found["page"] > 0 or (width == 1440 and found["cut"]):
                        wrong.append((width, path, found))
                page.goto(base + DASHBOARD)
                settled(page)
                if width == 1440:  # the long pause reason wraps beside the sidebar
                    # Read in one go: the page swaps its dashboard part as it reloads.
                    edges = page.evaluate(
                        """() => [
                            document.querySelector("#dashboard-queues table"),
                            document.getElementById("content-related"),
                        ].map((element) => element.getBoundingClientRect())
                         .map((box) => [box.left, box.right])"""
                    )
                    (_, queues_right), (sidebar_left, _) = edges
                    assert queues_right <= sidebar_left, edges
                page.context.close()
        finally:
            browser.close()
    assert not wrong  # (width, page, how far it scrolls sideways and which tables are cut)


@pytest.mark.parametrize("width", [1440, 390])
def test_chart_labels_are_whole_and_at_least_11_px(processes, width):
    UserFactory(username="admin", is_superuser=True)
    counter_rows(timezone.now())
    base = start_web(processes, "web")

    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = _sign_in(browser, base, width=width)
            settled(page)
            labels = page.evaluate(LABELS_JS)
            assert len(labels) >= 4 * 9  # every chart's axes
            for label in labels:
                assert label["inside"], (width, label)
                assert label["size"] >= 11, (width, label)
        finally:
            browser.close()


@pytest.mark.parametrize(("scheme", "theme"), [("light", "light"), ("dark", "dark")])
def test_badges_meet_wcag_aa_in_the_light_and_the_dark_theme(processes, scheme, theme):
    UserFactory(username="admin", is_superuser=True)
    for state in JobState.values:
        JobFactory(state=state, label=f"badge-{state}")
    base = start_web(processes, "web")

    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = _sign_in(browser, base, width=1440, scheme=scheme)
            page.evaluate(f"localStorage.setItem('theme', '{theme}')")
            page.goto(base + DASHBOARD)
            page.wait_for_selector('#dashboard-live[data-state="live"]', timeout=15_000)
            settled(page)
            for state in ("live", "offline", "connecting", "off"):
                page.evaluate(
                    f"document.getElementById('dashboard-live').dataset.state = '{state}'"
                )
                assert contrast(page, "#dashboard-live") >= AA, (theme, state)
            page.goto(base + reverse("admin:litejobs_workitem_queue", args=["disputes"]))
            page.wait_for_selector('#wq-live[data-state="live"]', timeout=15_000)
            for state in ("live", "offline", "off"):
                page.evaluate(f"document.getElementById('wq-live').dataset.state = '{state}'")
                assert contrast(page, "#wq-live") >= AA, (theme, state)
            page.goto(base + reverse("admin:litejobs_job_changelist"))
            settled(page)
            for state in JobState.values:
                badge = f".litejobs-state-{state}"
                assert page.locator(badge).count(), state
                assert contrast(page, badge) >= AA, (theme, state)
        finally:
            browser.close()


def test_the_badge_says_offline_while_the_live_channel_is_down(processes):
    UserFactory(username="admin", is_superuser=True)
    base = start_web(processes, "web")
    refused = []

    def refuse(socket) -> None:  # the live channel is down: the socket closes at once
        refused.append(socket)
        socket.close(code=1011, reason="down")

    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1440, "height": 900})
            page = context.new_page()
            page.route_web_socket("**/ws/litejobs/dashboard/", refuse)
            page.goto(f"{base}/admin/login/?next={DASHBOARD}")
            page.fill("#id_username", "admin")
            page.fill("#id_password", "admin")
            page.click("input[type=submit]")
            badge = page.locator("#dashboard-live")
            page.wait_for_selector('#dashboard-live[data-state="offline"]', timeout=15_000)
            assert badge.inner_text() == "offline: reloads every 5 s"
            page.wait_for_timeout(5_500)  # a periodic reload swaps the part: the badge stays
            assert badge.get_attribute("data-state") == "offline" and refused
        finally:
            browser.close()


def test_a_refusal_is_a_page_of_the_admin_with_the_way_back(processes):
    UserFactory(username="north", permissions=["litejobs.view_reportrun"])
    base = start_web(processes, "web")

    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = _sign_in(browser, base, width=1440, user="north")
            response = page.goto(base + reverse("admin:litejobs_job_changelist"))
            assert response.status == 403
            assert "may not see jobs" in page.inner_text("#refused-why")
            assert page.locator("#header").count() == 1  # the admin's own chrome
            page.click("#refused-ways a >> text=pages you may open")
            page.wait_for_selector("#dashboard-refused")
            assert page.url.endswith(DASHBOARD)
        finally:
            browser.close()
