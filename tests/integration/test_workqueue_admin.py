"""Human work queues in the admin: who sees a queue, what its page shows, what its buttons do."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.messages import get_messages
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from litejobs import clock as litejobs_clock
from litejobs import workqueues
from litejobs.models import WorkItem, WorkItemState
from litejobs.workqueues import listing
from tests.factories import UserFactory
from tests.testapp.factories import DisputeFactory

pytestmark = pytest.mark.django_db

INDEX = "/admin/litejobs/workitem/"


def queue_url(name: str = "disputes", **params) -> str:
    url = reverse("admin:litejobs_workitem_queue", kwargs={"queue": name})
    return url + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")


def texts(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def refusals(response) -> list[tuple[str, str]]:
    """Each refusal shown: (its code, its sentence); the code is a tag, never in the words."""
    shown = [m for m in get_messages(response.wsgi_request) if m.level_tag == "error"]
    return [(m.extra_tags, str(m)) for m in shown]


def plain(html: str) -> str:
    """The page's text: tags dropped, whitespace folded."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def row_ids(response) -> list[int]:
    return [int(i) for i in re.findall(r'<tr id="item-(\d+)"', response.content.decode())]


def signed_in(client, user):
    client.force_login(user)
    return client


# Who sees what -----------------------------------------------------------------------------


def test_a_reviewer_sees_the_queue_in_the_admin_and_its_index(client, clock, reviewers):
    alice = reviewers[0]
    workqueues.enqueue_item("disputes", DisputeFactory())
    signed_in(client, alice)
    home = client.get("/admin/").content.decode()
    assert INDEX in home  # the litejobs section shows "Work queues" to queue workers
    index = client.get(INDEX)
    assert index.status_code == 200
    assert queue_url() in index.content.decode()
    assert "Dispute review" in plain(index.content.decode())


def test_a_user_without_the_queue_permission_gets_403_and_cannot_act(client, clock, reviewers):
    carol = reviewers[2]
    item = workqueues.enqueue_item("disputes", DisputeFactory())
    signed_in(client, carol)
    assert client.get(queue_url()).status_code == 403
    assert client.get(INDEX).status_code == 403
    assert INDEX not in client.get("/admin/").content.decode()
    response = client.post(queue_url(), {"row_action": f"claim:{item.pk}"})
    assert response.status_code == 403
    assert client.get(f"{INDEX}{item.pk}/change/").status_code == 403
    assert WorkItem.objects.get(pk=item.pk).state == WorkItemState.OPEN


def test_an_anonymous_visitor_is_sent_to_the_login_and_unknown_queues_are_404(
    client, clock, reviewers
):
    response = client.get(queue_url())
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    signed_in(client, reviewers[0])
    assert client.get(queue_url("nope")).status_code == 404


def test_a_queue_worker_may_open_an_items_detail_page(client, clock, reviewers):
    item = workqueues.enqueue_item("disputes", DisputeFactory(amount="1900", days=6))
    response = signed_in(client, reviewers[0]).get(f"{INDEX}{item.pk}/change/")
    assert response.status_code == 200
    text = plain(response.content.decode())
    assert "amount: EUR 1,900" in text and "evidence: evidence missing" in text


def test_an_items_page_writes_its_claim_times_as_the_queue_page_does(client, clock, reviewers):
    alice, bob, _ = reviewers
    item = workqueues.enqueue_item("disputes", DisputeFactory())
    workqueues.claim(item, bob)
    queue_page = plain(signed_in(client, alice).get(queue_url()).content.decode())
    assert "bob , until 13:00:00 UTC" in queue_page
    page = client.get(f"{INDEX}{item.pk}/change/").content.decode()
    assert "p.m." not in page and "a.m." not in page and "noon" not in page
    for field, shown in (("claimed_at", "12:00:00 UTC"), ("claim_expires_at", "13:00:00 UTC")):
        assert f'<div class="readonly">{shown}</div>' in page.split(f"field-{field}_shown")[1]


# The page ----------------------------------------------------------------------------------


def test_the_page_lists_by_score_then_age_with_the_inputs_and_the_rule(client, clock, reviewers):
    alice = reviewers[0]
    low = workqueues.enqueue_item(
        "disputes", DisputeFactory(amount="50", days=0, evidence_provided=True)
    )
    clock.advance("1m")
    old = workqueues.enqueue_item("disputes", DisputeFactory(amount="1900", days=6))
    clock.advance("1m")
    new = workqueues.enqueue_item("disputes", DisputeFactory(amount="1900", days=6))
    response = signed_in(client, alice).get(queue_url())
    assert response.status_code == 200
    assert row_ids(response) == [old.pk, new.pk, low.pk]
    text = plain(response.content.decode())
    assert "urgency 82 : EUR 1,900 · 6 days · evidence missing" in text
    assert "rule dispute.urgency" in text
    assert "by score of rule dispute.urgency, highest first, then oldest first" in text
    assert "3 items" in text


def test_a_queue_of_one_item_counts_it_in_the_singular(client, clock, reviewers):
    workqueues.enqueue_item("disputes", DisputeFactory())
    text = plain(signed_in(client, reviewers[0]).get(queue_url()).content.decode())
    assert " 1 item " in text and "1 items" not in text


def test_the_page_shows_who_holds_a_claim_and_until_when(client, clock, reviewers):
    alice, bob, _ = reviewers
    held = workqueues.enqueue_item("disputes", DisputeFactory(amount="1900", days=6))
    mine = workqueues.enqueue_item("disputes", DisputeFactory(amount="1000", days=6))
    lapsed = workqueues.enqueue_item("disputes", DisputeFactory(amount="10", days=6))
    workqueues.claim(lapsed, bob, lease="10m")
    workqueues.claim(held, bob)
    workqueues.claim(mine, alice)
    clock.advance("11m")
    page = signed_in(client, alice).get(queue_url()).content.decode()
    rows = dict(re.findall(r'<tr id="item-(\d+)"[^>]*data-status="(\w+)"', page, re.S))
    assert rows == {str(held.pk): "theirs", str(mine.pk): "mine", str(lapsed.pk): "open"}
    text = plain(page)
    assert "bob , until 13:00:00 UTC" in text
    assert "you , until 13:00:00 UTC" in text


def test_the_page_costs_a_bounded_number_of_queries_whatever_its_size(client, clock, reviewers):
    alice = reviewers[0]
    for n in range(120):
        item = workqueues.enqueue_item("disputes", DisputeFactory(amount=str(n), days=n % 9))
        if n % 7 == 0:
            workqueues.claim(item, alice)
    signed_in(client, alice)
    client.get(queue_url(per_page=25))  # sessions and caches warm
    counts = {}
    for size in (25, 100):
        with CaptureQueriesContext(connection) as queries:
            response = client.get(queue_url(per_page=size))
        assert response.status_code == 200 and len(row_ids(response)) == size
        counts[size] = len(queries)
    assert counts[25] == counts[100] <= 8, counts  # session, user, 2 perms, page, 2 counts, rows


def test_views_filter_mine_others_unclaimed_and_closed(client, clock, reviewers):
    alice, bob, _ = reviewers
    a, b, c, d = (
        workqueues.enqueue_item("disputes", DisputeFactory(amount=str(x))) for x in (4, 3, 2, 1)
    )
    workqueues.claim(a, alice)
    workqueues.claim(b, bob)
    workqueues.claim(d, alice)
    workqueues.resolve(d, alice, "refund")
    signed_in(client, alice)
    assert row_ids(client.get(queue_url(view="mine"))) == [a.pk]
    assert row_ids(client.get(queue_url(view="others"))) == [b.pk]
    assert row_ids(client.get(queue_url(view="unclaimed"))) == [c.pk]
    assert row_ids(client.get(queue_url(view="closed"))) == [d.pk]
    assert "done (Refund) by alice" in plain(client.get(queue_url(view="closed")).content.decode())


def test_next_page_links_walk_the_queue_without_repeats(client, clock, reviewers):
    for n in range(60):
        workqueues.enqueue_item("disputes", DisputeFactory(amount=str(n * 17 % 300), days=n % 4))
    signed_in(client, reviewers[0])
    seen, url = [], queue_url(per_page=25)
    while url:
        response = client.get(url)
        seen += row_ids(response)
        found = re.search(r'<a href="([^"]+)" id="wq-next"', response.content.decode())
        url = found.group(1).replace("&amp;", "&") if found else None
    assert seen == [i.pk for i in workqueues.items("disputes")]
    response = client.get(queue_url(after="garbage"))
    assert response.status_code == 200
    [(code, text)] = refusals(response)
    assert code == "cursor-invalid" and not text.startswith("[")


# The buttons -------------------------------------------------------------------------------


def test_required_mode_refuses_a_resolve_without_a_claim_through_the_admin(
    client, clock, reviewers
):
    item = workqueues.enqueue_item("disputes", DisputeFactory())
    signed_in(client, reviewers[0])
    response = client.post(queue_url(), {"row_action": f"resolve:{item.pk}:refund"}, follow=True)
    [(code, text)] = refusals(response)
    assert code == "claim-required" and text.startswith("Work queue 'disputes' requires"), text
    assert WorkItem.objects.get(pk=item.pk).state == WorkItemState.OPEN

    answer = client.post(
        queue_url(), {"row_action": f"resolve:{item.pk}:refund"}, HTTP_ACCEPT="application/json"
    ).json()
    assert answer["results"] == [
        {
            "id": item.pk,
            "ok": False,
            "code": "claim-required",
            "message": answer["results"][0]["message"],
        }
    ]
    assert f"claim item #{item.pk} first" in answer["results"][0]["message"]


def test_claim_then_resolve_through_the_admin(client, clock, reviewers):
    alice = reviewers[0]
    item = workqueues.enqueue_item("disputes", DisputeFactory())
    signed_in(client, alice)
    answer = client.post(
        queue_url(), {"row_action": f"claim:{item.pk}"}, HTTP_ACCEPT="application/json"
    ).json()
    assert answer["results"][0]["ok"]
    assert answer["items"][0]["state"] == "claimed" and answer["items"][0]["holder"] == "alice"
    response = client.post(queue_url(), {"row_action": f"resolve:{item.pk}:contest"}, follow=True)
    assert texts(response) == [f"Resolved item #{item.pk}: Contest."]
    stored = WorkItem.objects.get(pk=item.pk)
    assert (stored.state, stored.resolution, stored.resolved_by) == ("done", "contest", alice)


def test_acting_on_an_item_someone_else_holds_is_refused_with_a_clear_message(
    client, clock, reviewers
):
    alice, bob, _ = reviewers
    item = workqueues.enqueue_item("disputes", DisputeFactory())
    workqueues.claim(item, alice)
    signed_in(client, bob)
    for action in (f"claim:{item.pk}", f"release:{item.pk}", f"resolve:{item.pk}:refund"):
        response = client.post(queue_url(), {"row_action": action}, follow=True)
        assert refusals(response) == [
            (
                "claim-held",
                f"Item #{item.pk} is held by alice until 13:00:00 UTC: pick another item, or "
                "wait until they release it or the claim expires.",
            )
        ]
    assert WorkItem.objects.get(pk=item.pk).claimed_by == alice


def test_bulk_actions_report_each_refusal_and_do_the_rest(client, clock, reviewers):
    alice, bob, _ = reviewers
    items = [workqueues.enqueue_item("disputes", DisputeFactory(amount=str(n))) for n in range(4)]
    workqueues.claim(items[0], bob)
    signed_in(client, alice)
    response = client.post(
        queue_url(), {"action": "claim", "item": [i.pk for i in items], "bulk": "1"}, follow=True
    )
    messages = texts(response)
    assert messages[0].startswith("Done for 3 items:")
    assert messages[1].startswith(f"Item #{items[0].pk} is held by bob")
    response = client.post(
        queue_url(),
        {"action": "resolve:escalate", "item": [i.pk for i in items], "bulk": "1"},
        follow=True,
    )
    assert WorkItem.objects.filter(state="done", resolution="escalate").count() == 3
    assert WorkItem.objects.get(pk=items[0].pk).claimed_by == bob
    response = client.post(queue_url(), {"action": "claim", "bulk": "1"}, follow=True)
    assert refusals(response) == [("selection-empty", "Tick at least one item first.")]


def test_claim_the_next_item_takes_the_most_urgent_unclaimed_one(client, clock, reviewers):
    alice, bob, _ = reviewers
    urgent = workqueues.enqueue_item("disputes", DisputeFactory(amount="1900", days=6))
    other = workqueues.enqueue_item("disputes", DisputeFactory(amount="10"))
    response = signed_in(client, alice).post(queue_url(), {"next": "1"})
    assert response["Location"].endswith(f"#item-{urgent.pk}")
    assert WorkItem.objects.get(pk=urgent.pk).claimed_by == alice
    client.get(queue_url())  # shows (and so clears) alice's message
    client.force_login(bob)
    response = client.post(queue_url(), {"next": "1"}, follow=True)
    assert texts(response) == [f"You hold item #{other.pk} until 13:00:00 UTC; it is marked below."]
    assert WorkItem.objects.get(pk=other.pk).claimed_by == bob
    response = client.post(queue_url(), {"next": "1"}, follow=True)
    assert refusals(response) == [("queue-empty", "No unclaimed item is left.")]


def test_a_disabled_queue_shows_and_accepts_no_claim_actions(
    client, clock, reviewers, declare_queue
):
    declare_queue("plain-review", claim="disabled")
    item = workqueues.enqueue_item("plain-review", DisputeFactory())
    signed_in(client, reviewers[0])
    page = client.get(queue_url("plain-review")).content.decode()
    assert "wq-claim-btn" not in page and "wq-release-btn" not in page
    assert "Claim the next item" not in page
    assert f'value="resolve:{item.pk}:resolved"' in page
    response = client.post(queue_url("plain-review"), {"row_action": f"claim:{item.pk}"})
    assert response.status_code == 302
    response = client.post(queue_url("plain-review"), {"next": "1"}, follow=True)
    assert refusals(response)[0][0] == "claim-disabled"
    assert WorkItem.objects.get(pk=item.pk).state == WorkItemState.OPEN


def test_an_item_of_another_queue_cannot_be_reached_through_this_queues_page(
    client, clock, reviewers, declare_queue
):
    declare_queue("secret", claim="optional", permission="auth.change_user")
    hidden = workqueues.enqueue_item("secret", DisputeFactory())
    signed_in(client, reviewers[0])
    response = client.post(queue_url(), {"row_action": f"resolve:{hidden.pk}:refund"}, follow=True)
    assert refusals(response)[0][0] == "item-not-found"
    assert WorkItem.objects.get(pk=hidden.pk).state == WorkItemState.OPEN


# 100,000 items ----------------------------------------------------------------------------


def fill(count: int) -> None:
    """``count`` live items of the dispute queue in one statement (targets need not exist)."""
    from django.contrib.contenttypes.models import ContentType

    from tests.testapp.models import Dispute

    content_type = ContentType.objects.get_for_model(Dispute).pk
    now = litejobs_clock.now()
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO litejobs_workitem (queue, content_type_id, object_id, score,
                                           score_inputs, score_rule, scored_at, created_at)
            SELECT 'disputes', %s, 'x' || n, (n * 7919) %% 97, '[["amount", "EUR 1"]]',
                   'dispute.urgency', %s, %s - (n || ' seconds')::interval
            FROM generate_series(1, %s) AS n
            """,
            [content_type, now, now, count],
        )
        cursor.execute("ANALYZE litejobs_workitem")


def nodes(node: dict):
    yield node
    for child in node.get("Plans", ()):
        yield from nodes(child)


def test_a_deep_page_of_100000_items_reads_one_page_of_the_index(client, clock, reviewers):
    fill(100_000)
    deep = workqueues.items("disputes")[60_000]
    position = listing.position_after(deep, "todo")
    query = workqueues.items("disputes").filter(listing._after("todo", position))[:51]
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
        raw = cursor.fetchone()[0]
    root = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
    found = list(nodes(root))
    scans = [n for n in found if n.get("Index Name") == "litejobs_workitem_listing"]
    assert scans, json.dumps(root, indent=1)
    assert not any(n["Node Type"] == "Sort" for n in found), json.dumps(root, indent=1)
    assert scans[0]["Actual Rows"] <= 51  # one page, not the 60,000 rows before it
    assert "Index Cond" in scans[0] and "created_at" in scans[0]["Index Cond"]

    signed_in(client, reviewers[0])
    with CaptureQueriesContext(connection) as queries:
        response = client.get(queue_url(after=position.replace("+", "%2B")))
    assert response.status_code == 200 and len(row_ids(response)) == 50
    assert row_ids(response)[0] == workqueues.items("disputes")[60_001].pk
    assert len(queries) <= 10
    assert "10000+ items" in plain(response.content.decode())


def test_the_lease_text_and_the_mode_help_are_on_the_page(client, clock, reviewers):
    page = plain(signed_in(client, reviewers[0]).get(queue_url()).content.decode())
    assert "Claim an item before you act on it" in page
    assert "A claim lasts 1 h; an expired claim is no claim." in page


def test_a_user_with_only_view_permission_on_items_sees_no_queue_page(client, clock):
    viewer = UserFactory(username="viewer", permissions=["litejobs.view_workitem"])
    signed_in(client, viewer)
    index = client.get(INDEX)
    assert index.status_code == 200 and "You may work no queue" in plain(index.content.decode())
    assert client.get(queue_url()).status_code == 403


def test_a_long_claim_shows_its_date_and_the_lease_in_its_own_unit(
    client, clock, reviewers, declare_queue
):
    declare_queue("slow-review", claim="optional", claim_lease="2d")
    item = workqueues.enqueue_item("slow-review", DisputeFactory())
    workqueues.claim(item, reviewers[1])
    page = plain(signed_in(client, reviewers[0]).get(queue_url("slow-review")).content.decode())
    assert "bob , until 03 Mar 12:00:00 UTC" in page
    assert "A claim lasts 48 h;" in page


def test_a_claim_held_refusal_writes_the_claim_time_as_the_row_does(client, clock, reviewers):
    alice, bob, _ = reviewers
    item = workqueues.enqueue_item("disputes", DisputeFactory())
    clock.advance("5s")
    workqueues.claim(item, alice)  # held until 13:00:05: the seconds show everywhere
    signed_in(client, bob)
    response = client.post(queue_url(), {"row_action": f"claim:{item.pk}"}, follow=True)
    assert f"Item #{item.pk} is held by alice until 13:00:05 UTC:" in texts(response)[0]
    assert "alice , until 13:00:05 UTC" in plain(client.get(queue_url()).content.decode())


def test_a_rows_own_page_shows_its_claim_and_the_resolutions_made(rf, clock, reviewers):
    from django.contrib import admin as django_admin

    from litejobs.workqueues.admin import WorkItemsShown
    from tests.testapp.models import Dispute

    class DisputeAdmin(WorkItemsShown, django_admin.ModelAdmin):
        pass

    shown = DisputeAdmin(Dispute, django_admin.AdminSite(name="rows"))
    alice, bob, _ = reviewers
    dispute = DisputeFactory()
    assert shown.work_claim(dispute) == "Not waiting in any work queue."
    assert shown.work_resolutions(dispute) == "None yet."

    first = workqueues.enqueue_item("disputes", dispute)
    assert shown.work_claim(dispute) == (
        '<p class="wq-claim-of">Unclaimed in Dispute review: open to anyone who may work it.</p>'
    )
    workqueues.claim(first, alice)
    clock.advance("5m")
    workqueues.resolve(first.pk, alice, "refund", note="paid back in full")
    clock.advance("605s")
    again = workqueues.enqueue_item("disputes", dispute)  # disputed again later
    workqueues.claim(again, bob)

    assert shown.work_claim(dispute) == (
        '<p class="wq-claim-of">Held by bob since 12:15:05 UTC, until 13:15:05 UTC, in Dispute '
        "review.</p>"
    )
    table = plain(str(shown.work_resolutions(dispute)))
    assert "when who what note queue 12:05:00 UTC alice Refund paid back in full Dispute" in table

    request = rf.get("/")
    request.user = UserFactory(username="root", is_superuser=True, is_staff=True)
    sections = shown.get_fieldsets(request, dispute)
    assert sections[-1] == ("Work queue", {"fields": ("work_claim", "work_resolutions")})
    assert all("work_claim" not in opts["fields"] for _, opts in sections[:-1])
