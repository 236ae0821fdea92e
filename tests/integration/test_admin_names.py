"""Every sidebar and app-list name is the title of the page it opens."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _title(page: str) -> str:
    return html.unescape(re.search(r"<h1>(.*?)</h1>", page, re.S).group(1)).strip()


def test_each_litejobs_sidebar_name_is_the_title_of_the_page_it_opens(client):
    client.force_login(UserFactory(username="root", is_superuser=True, is_staff=True))
    app = client.get(reverse("admin:app_list", kwargs={"app_label": "litejobs"}))
    models = app.context["app_list"][0]["models"]
    assert len(models) > 10
    differing = []
    for model in models:
        name = str(model["name"])
        title = _title(client.get(model["admin_url"]).content.decode())
        # Django's own listings are titled "Select <verbose name> to view": the same name.
        standard = re.fullmatch(r"Select (.+) to (view|change)", title)
        shown = standard.group(1) if standard else title
        expected = str(model["model"]._meta.verbose_name) if standard else name
        if shown.casefold() != expected.casefold():
            differing.append((name, title))
    assert differing == []
