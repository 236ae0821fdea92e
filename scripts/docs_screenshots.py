"""Take the operating docs' screenshots (docs/operating/img/) of a running demo, in headless
Chromium: the dashboard at 1440 px in the light and the dark theme and at 390 px, a refusal
(a tenant's report user opening the job list) and a work queue at 390 px.

    make demo            # in another terminal, or: manage.py demo --port 8731
    python scripts/docs_screenshots.py [http://127.0.0.1:8000]

It needs Playwright and a Chromium (Debian's /usr/bin/chromium by default; CHROMIUM=... to
choose another). Look at every picture before it goes into the docs.
"""

import os
import sys
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "docs" / "operating" / "img"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")

#: name, path, signed-in user, width, colour scheme, and whether the whole page (else what
#: a window of 900 px shows: a work queue holds hundreds of rows).
SHOTS = (
    ("dashboard", "/admin/litejobs/", "admin", 1440, "light", True),
    ("dashboard-dark", "/admin/litejobs/", "admin", 1440, "dark", True),
    ("dashboard-390", "/admin/litejobs/", "admin", 390, "light", True),
    ("refusal", "/admin/litejobs/job/", "north", 1440, "light", False),
    ("work-queue-390", "/admin/litejobs/workitem/queue/disputes/", "alice", 390, "dark", False),
)


def settle(page: Page) -> None:
    """Wait for the page as a person sees it: loaded, live when it can be, no transition."""
    page.wait_for_load_state("load")
    live = page.locator('#dashboard-live[data-state="live"], #wq-live[data-state="live"]')
    if page.locator("#dashboard-live, #wq-live").count():
        live.first.wait_for(timeout=15_000)
        page.wait_for_timeout(1_500)  # the reload at the socket's opening
    page.wait_for_function("document.getAnimations().length === 0")


def main(base: str) -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        for name, path, user, width, scheme, whole in SHOTS:
            context = browser.new_context(
                viewport={"width": width, "height": 900}, color_scheme=scheme
            )
            page = context.new_page()
            page.goto(f"{base}/admin/login/?next={path}")
            page.fill("#id_username", user)
            page.fill("#id_password", user)
            page.click("input[type=submit]")
            page.wait_for_selector("#content")
            settle(page)
            page.screenshot(path=str(IMAGES / f"{name}.png"), full_page=whole)
            print(IMAGES / f"{name}.png")
            context.close()
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000")
