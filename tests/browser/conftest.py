"""What the browser tests share: Debian's chromium for Playwright, and real web servers
(``manage.py runserver``: daphne, as ``make demo`` runs it) on free local ports."""

from __future__ import annotations

import shutil
import socket
import urllib.error
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
