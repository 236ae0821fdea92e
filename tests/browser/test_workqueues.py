"""Two people on one queue page in a real browser: a claim by one shows on the other's page.

Two real web servers (``manage.py runserver``, daphne's ASGI server, exactly what ``make demo``
runs) serve the test database; alice's browser talks to the first, bob's to the second, so the
update crosses processes the way it does behind a load balancer: PostgreSQL NOTIFY reaches the
LISTEN connection of every web process. The browser is Debian's chromium driven by Playwright.
"""

from __future__ import annotations

import time

import pytest

from litejobs import workqueues
from litejobs.models import WorkItem, WorkItemState
from tests.browser.conftest import (
    BROWSER_MARKS,
    CHROMIUM,
    CHROMIUM_ARGS,
    contrast,
    served_late,
    settled,
    start_web,
)
from tests.factories import UserFactory
from tests.testapp.factories import DisputeFactory

#: How soon another person's page must show a claim (what live pages promise).
LIVE_WITHIN = 1.0

pytestmark = BROWSER_MARKS


def sign_in(browser, base: str, username: str, path: str):
    page = browser.new_context().new_page()
    page.goto(f"{base}/admin/login/?next={path}")
    page.fill("#id_username", username)
    page.fill("#id_password", username)
    page.click("input[type=submit]")
    page.wait_for_selector('#wq-live[data-state="live"]', timeout=15_000)
    return page


def test_two_people_on_one_queue_page_see_each_others_claims_within_a_second(processes):
    alice = UserFactory(
        username="alice", permissions=["testapp.review_dispute", "testapp.view_dispute"]
    )
    UserFactory(username="bob", permissions=["testapp.review_dispute", "testapp.view_dispute"])
    items = [
        workqueues.enqueue_item("disputes", DisputeFactory(amount=amount, days=days))
        for amount, days in (("1900", 6), ("800", 3), ("120", 1))
    ]
    first, second, third = items
    path = "/admin/litejobs/workitem/queue/disputes/"
    web1, web2 = start_web(processes, "web1"), start_web(processes, "web2")

    from playwright.sync_api import sync_playwright

    timings = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            alices = sign_in(browser, web1, "alice", path)
            bobs = sign_in(browser, web2, "bob", path)
            row = f"#item-{first.pk}"
            assert bobs.get_attribute(row, "data-status") == "open"
            assert "urgency 82: EUR 1,900 · 6 days · evidence missing" in " ".join(
                bobs.inner_text(f"{row} .wq-score").split()
            )

            # alice claims the most urgent dispute; bob's page (another server) shows it.
            started = time.monotonic()
            alices.click(f"{row} .wq-claim-btn")
            bobs.wait_for_selector(f'{row}[data-status="theirs"]', timeout=5_000)
            timings["claim"] = time.monotonic() - started
            assert "alice" in bobs.inner_text(f"{row} .wq-claim")
            assert not bobs.is_visible(f"{row} .wq-claim-btn")  # no button to act on it
            assert alices.get_attribute(row, "data-status") == "mine"

            # bob asks for the next item: never alice's.
            bobs.click("#wq-claim-next")
            bobs.wait_for_selector(f'#item-{second.pk}[data-status="mine"]', timeout=5_000)
            alices.wait_for_selector(f'#item-{second.pk}[data-status="theirs"]', timeout=5_000)

            # alice resolves hers; bob sees it done, alice sees bob's release.
            started = time.monotonic()
            alices.click(f"{row} .wq-resolve-btn >> text=Refund")
            bobs.wait_for_selector(f'{row}[data-status="done"]', timeout=5_000)
            timings["resolve"] = time.monotonic() - started
            assert "done (Refund) by alice" in bobs.inner_text(f"{row} .wq-claim")
            bobs.click(f"#item-{second.pk} .wq-release-btn")
            alices.wait_for_selector(f'#item-{second.pk}[data-status="open"]', timeout=5_000)

            # With claims required, alice cannot resolve what she does not hold: no button.
            assert not alices.is_visible(f"#item-{third.pk} .wq-resolve-btn")
        finally:
            browser.close()

    assert timings["claim"] <= LIVE_WITHIN, timings
    assert timings["resolve"] <= LIVE_WITHIN, timings
    stored = {item.pk: item for item in WorkItem.objects.all()}
    assert stored[first.pk].state == WorkItemState.DONE
    assert stored[first.pk].resolved_by_id == alice.pk
    assert stored[second.pk].state == WorkItemState.OPEN
    assert stored[third.pk].state == WorkItemState.OPEN


#: The held rows' tints (workqueue.css), mine then theirs, per theme.
TINTS = {
    "light": ["rgb(234, 246, 234)", "rgb(255, 244, 224)"],
    "dark": ["rgb(29, 58, 34)", "rgb(68, 50, 15)"],
}


def _background(page, selector: str) -> str:
    """The element's own background colour, as computed now."""
    return page.evaluate(
        "(s) => getComputedStyle(document.querySelector(s)).backgroundColor", selector
    )


@pytest.mark.parametrize(
    ("scheme", "theme"), [("dark", "auto"), ("light", "dark"), ("light", "auto"), ("dark", "light")]
)
def test_held_rows_read_well_in_the_light_and_the_dark_theme(processes, scheme, theme):
    permissions = ["testapp.review_dispute", "testapp.view_dispute"]
    alice = UserFactory(username="alice", permissions=permissions)
    bob = UserFactory(username="bob", permissions=permissions)
    mine, theirs = (
        workqueues.enqueue_item("disputes", DisputeFactory(amount=amount, days=1))
        for amount in ("900", "800")
    )
    workqueues.claim(mine.pk, alice)
    workqueues.claim(theirs.pk, bob)
    path = "/admin/litejobs/workitem/queue/disputes/"
    web = start_web(processes, "web")

    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(color_scheme=scheme)
            context.add_init_script(f"localStorage.setItem('theme', '{theme}')")
            page = context.new_page()
            # A loaded machine serves the page's stylesheet late: the rows are in the document
            # (and match a selector) before it applies, though nothing is painted until then.
            served_late(page, "**/litejobs/workqueue.css")
            page.goto(f"{web}/admin/login/?next={path}")
            page.fill("#id_username", "alice")
            page.fill("#id_password", "alice")
            page.click("input[type=submit]")
            page.wait_for_selector(f'#item-{theirs.pk}[data-status="theirs"]')
            # Read the colours the page is painted with: every stylesheet applied, and a
            # changed row's fade (a CSS transition) over.
            settled(page)
            tints = TINTS[scheme if theme == "auto" else theme]
            for item, tint in zip((mine, theirs), tints, strict=True):
                cell = f"#item-{item.pk} td.wq-claim"
                assert _background(page, cell) == tint, (scheme, theme)
                assert contrast(page, cell) >= 7, (scheme, theme)
        finally:
            browser.close()
