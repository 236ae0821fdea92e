"""What the browser tests share: Debian's chromium for Playwright, and real web servers
(``manage.py runserver``: daphne, as ``make demo`` runs it) on free local ports."""

from __future__ import annotations

import http.server
import shutil
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wait_for

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


#: Every browser test: slow, on a database the web server shares, skipped without chromium.
BROWSER_MARKS = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not CHROMIUM.exists() or shutil.which("chromium") is None,
        reason="needs Debian's chromium (.ci/run installs it: apt-get install chromium)",
    ),
]


def signed_in_page(browser: Any, base: str, path: str, user: str = "admin") -> Any:
    """A 1440 x 900 page signed in as ``user`` (password: the user name), opened at ``path``."""
    page = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
    page.goto(f"{base}/admin/login/?next={path}")
    page.fill("#id_username", user)
    page.fill("#id_password", user)
    page.click("input[type=submit]")
    return page


#: The WCAG contrast ratio of an element's text against what is painted behind it: its own
#: background, composed over its ancestors' (alpha-blended) down to the page's, so a
#: transparent cell is measured against the row or page behind it, never against black.
CONTRAST_JS = """(selector) => {
    const parse = (color) => {
        const [r, g, b, a = 1] = color.match(/[\\d.]+/g).map(Number);
        return { rgb: [r, g, b], a };
    };
    const layers = [];
    for (let node = document.querySelector(selector); node; node = node.parentElement) {
        const layer = parse(getComputedStyle(node).backgroundColor);
        if (layer.a > 0) { layers.push(layer); }
        if (layer.a >= 1) { break; }
    }
    let behind = [255, 255, 255]; // the canvas, under every layer
    for (const layer of layers.reverse()) {
        behind = behind.map((c, i) => layer.rgb[i] * layer.a + c * (1 - layer.a));
    }
    const text = parse(getComputedStyle(document.querySelector(selector)).color);
    const fore = behind.map((c, i) => text.rgb[i] * text.a + c * (1 - text.a));
    const luminance = (rgb) => {
        const [r, g, b] = rgb.map((c) => {
            c = c / 255;
            return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
        });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const [light, dark] = [luminance(fore), luminance(behind)].sort((a, b) => b - a);
    return (light + 0.05) / (dark + 0.05);
}"""


def contrast(page: Any, selector: str) -> float:
    """The WCAG contrast ratio of the first element ``selector`` finds, as the browser paints
    it (AA asks 4.5 for body text, AAA 7)."""
    return page.evaluate(CONTRAST_JS, selector)


def settled(page: Any) -> None:
    """Wait until the page is as a person sees it: loaded (every stylesheet applied: until the
    render-blocking ones arrive, computed styles lack them though nothing is painted) and no
    transition or animation running."""
    page.wait_for_load_state("load")
    page.wait_for_function("document.getAnimations().length === 0")


def served_late(page: Any, pattern: str, seconds: float = 1.0) -> None:
    """Serve what ``pattern`` matches ``seconds`` late, as a loaded machine may, without
    blocking Playwright's own thread (a sleep in a route handler would stall the test too):
    the browser fetches it through a small local server that waits, then relays it."""

    class Late(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            time.sleep(seconds)
            target = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)["url"][0]
            with urllib.request.urlopen(target, timeout=10) as answer:  # noqa: S310 - 127.0.0.1
                body, kind = answer.read(), answer.headers.get("Content-Type", "")
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            """Quiet: the test's output is the browser's."""

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Late)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    relay = f"http://127.0.0.1:{server.server_address[1]}/?url="
    page.route(
        pattern, lambda route: route.continue_(url=relay + urllib.parse.quote(route.request.url))
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - http://127.0.0.1
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def start_web(processes, name: str) -> str:
    port = free_port()
    server = processes.start(
        "runserver", "--noreload", "--insecure", f"127.0.0.1:{port}", name=name
    )
    base = f"http://127.0.0.1:{port}"
    wait_for(
        lambda: server.poll() is not None or answers(base + "/admin/login/"),
        timeout=60,
        what=f"{name} to serve the admin",
    )
    assert server.poll() is None, processes.log(server)
    return base
