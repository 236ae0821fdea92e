"""Every litejobs admin page, as its viewers read it: times written one way (to the second,
with their zone), counts in words, refusals in the admin's chrome, and no link a viewer
cannot follow."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.urls import reverse

from tests.admin_pages import litejobs_pages, seed_every_page
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

#: How Django writes an instant when left to itself (to the minute, in the locale's words),
#: and how Python does (ISO, with microseconds or an offset).
RAW_TIMES = re.compile(
    r"\b(a\.m\.|p\.m\.|midnight|noon)\b|\d{4}-\d\d-\d\dT\d\d:\d\d|\d\d:\d\d:\d\d\.\d+|[+-]00:00\b"
)
LINK = re.compile(r'<a\s[^>]*href="(/admin/[^"#]*)"')


def visible(html: str) -> str:
    """The page's text as a person reads it: scripts, styles and tags dropped."""
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)))


@pytest.fixture
def pages(clock):
    seed_every_page()
    return list(litejobs_pages())


def test_every_page_writes_times_to_the_second_with_their_zone_and_counts_in_words(client, pages):
    client.login(username="admin", password="admin")
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, path
        text = visible(response.content.decode())
        assert not RAW_TIMES.search(text), (path, RAW_TIMES.search(text).group(0))
        assert "(s)" not in text, (path, text[max(0, text.index("(s)") - 80) :][:120])
        assert "`" not in text, (path, text[max(0, text.index("`") - 80) :][:160])
    actions = client.get(reverse("admin:litejobs_operatoraction_changelist")).content.decode()
    assert re.search(r"\d\d:\d\d:\d\d UTC</time> <span class=\"litejobs-ago\">\(", actions)


VIEWERS = {
    "a tenant's report user": ["litejobs.view_reportrun", "litejobs.view_reportaudit"],
    "a queue watcher": ["litejobs.view_queuestate"],
    "a job reader": ["litejobs.view_job"],
    "a worker watcher": ["litejobs.view_worker", "litejobs.view_operatoraction"],
}


@pytest.mark.parametrize("permissions", VIEWERS.values(), ids=VIEWERS.keys())
def test_a_viewer_is_shown_as_links_only_pages_they_may_open(client, pages, permissions):
    client.force_login(UserFactory(username="viewer", permissions=permissions))
    followed: dict[str, int] = {}
    for path in pages:
        response = client.get(path)
        if response.status_code != 200:
            continue
        for link in LINK.findall(response.content.decode()):
            href = unescape(link)
            if href not in followed:
                followed[href] = client.get(href).status_code
            assert followed[href] != 403, f"{path} links to {href}, which answers 403"
    assert followed  # each viewer opened something


def test_a_refusal_says_why_in_the_admins_chrome_and_offers_the_ways_back(client, pages):
    client.force_login(UserFactory(username="north", permissions=["litejobs.view_reportrun"]))
    refused = client.get(reverse("admin:litejobs_job_changelist"))
    html = refused.content.decode()
    assert refused.status_code == 403
    assert 'id="refused-why"' in html and "may not see jobs" in html
    assert "“litejobs | job | Can view job”" in html
    assert 'class="breadcrumbs"' in html and "Django administration" in html  # the chrome
    ways = re.search(r'<ul id="refused-ways">(.*?)</ul>', html, re.S).group(1)
    assert reverse("admin:app_list", kwargs={"app_label": "litejobs"}) in ways
    assert reverse("admin:litejobs_job_changelist") not in ways  # not for them

    missing = client.get(reverse("admin:litejobs_workitem_queue", kwargs={"queue": "nosuch"}))
    assert missing.status_code == 404
    html = missing.content.decode()
    said = visible(re.search(r'id="refused-why"[^>]*>(.*?)</p>', html, re.S)[1])
    assert "nosuch" in said and "[" not in said  # the sentence; its code in an attribute
    assert 'data-code="work-queue-unknown"' in html

    client.logout()
    signed_out = client.get(reverse("admin:litejobs_job_changelist"))
    assert signed_out.status_code == 302
    assert signed_out["Location"].startswith(reverse("admin:login"))


def test_a_record_that_is_not_there_is_a_404_page_leading_back_to_its_list(admin_client, clock):
    for name in ("job", "schedule", "webhookendpoint"):
        missing = admin_client.get(reverse(f"admin:litejobs_{name}_change", args=[987654]))
        html = missing.content.decode()
        assert missing.status_code == 404, name
        said = visible(re.search(r'id="refused-why"[^>]*>(.*?)</p>', html, re.S)[1])
        assert "987654" in said and "deleted, purged after its retention" in said
        ways = re.search(r'<ul id="refused-ways">(.*?)</ul>', html, re.S).group(1)
        assert reverse(f"admin:litejobs_{name}_changelist") in ways
