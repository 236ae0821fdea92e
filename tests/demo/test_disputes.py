"""The demo's dispute queue: declared, seeded once, and two reviewers clear it side by side."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from litejobs import workqueues
from litejobs.exceptions import LitejobsError
from litejobs.models import WorkItem, WorkItemState
from litejobs.workqueues import declarations as queues
from project.demo.seed import seed_demo_data
from project.payments.models import Dispute
from project.payments.seed import DISPUTE_COUNT, REVIEWERS, seed_disputes


@pytest.mark.django_db
def test_seeding_opens_a_few_hundred_scored_disputes_and_two_reviewers_once(clock):
    report = seed_demo_data()
    assert report.users_created == ["admin", "ops"]  # the operators' logins are unchanged
    assert report.disputes.reviewers_created == ["alice", "bob"]
    assert report.disputes.disputes_created == DISPUTE_COUNT >= 200
    assert Dispute.objects.count() == WorkItem.objects.filter(queue="disputes").count() == 300
    scores = list(workqueues.items("disputes").values_list("score", flat=True))
    assert scores == sorted(scores, reverse=True) and len(set(scores)) > 20
    top = workqueues.items("disputes").first()
    assert [name for name, _ in top.score_inputs] == ["amount", "age", "evidence"]

    again = seed_disputes()
    assert again.reviewers_created == [] and again.disputes_created == 0
    assert Dispute.objects.count() == 300

    users = get_user_model().objects
    for reviewer in REVIEWERS:
        user = users.get(username=reviewer.username)
        assert user.is_staff and not user.is_superuser
        assert user.check_password(reviewer.password)
        assert user.has_perm("payments.review_dispute")
    ops = users.get(username="ops")
    assert not ops.has_perm("payments.review_dispute")


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_clear_the_queue_side_by_side_never_on_the_same_item(clock):
    seed_disputes(count=120)
    users = get_user_model().objects
    people = [users.get(username=r.username) for r in REVIEWERS]
    worked: dict[str, list[int]] = {person.username: [] for person in people}
    refusals: list[LitejobsError] = []
    start = threading.Barrier(len(people))

    def clear(person) -> None:
        try:
            start.wait()
            while (item := workqueues.claim_next("disputes", person)) is not None:
                try:
                    workqueues.resolve(item.pk, person, "refund")
                except LitejobsError as error:
                    refusals.append(error)
                worked[person.username].append(item.pk)
        finally:
            connection.close()

    threads = [threading.Thread(target=clear, args=(person,)) for person in people]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)

    assert refusals == []
    alice, bob = worked["alice"], worked["bob"]
    assert not set(alice) & set(bob)  # never the same item
    assert alice and bob  # side by side: both did some
    assert len(alice) + len(bob) == 120
    done = WorkItem.objects.filter(queue="disputes", state=WorkItemState.DONE)
    assert done.count() == 120
    for item in done:
        assert item.pk in worked[item.resolved_by_name]


def test_the_demo_queue_is_declared_with_its_mode_rule_lease_and_permission():
    queue = queues.get("disputes")
    assert queue.model is Dispute
    assert queue.claim == "required"
    assert queue.score == "dispute.urgency"
    assert queue.claim_lease == timedelta(hours=1)
    assert queue.permission == "payments.review_dispute"
    assert queues.get_rule("dispute.urgency").label == "urgency"


@pytest.mark.django_db
def test_a_disputes_own_page_shows_its_claim_and_its_resolutions(client, clock):
    from django.urls import reverse

    seed_disputes(count=2)
    users = get_user_model().objects
    alice, bob = (users.get(username=r.username) for r in REVIEWERS)
    first, second = workqueues.items("disputes")[:2]
    workqueues.claim(first, alice)
    workqueues.resolve(first.pk, alice, "contest", note="evidence sent to the bank")
    workqueues.claim(second, bob)

    client.force_login(alice)
    resolved = client.get(
        reverse("admin:payments_dispute_change", args=[first.object_id])
    ).content.decode()
    assert "Work queue" in resolved and "Not waiting in any work queue." in resolved
    assert "<td>alice</td><td>Contest</td><td>evidence sent to the bank</td>" in resolved
    held = client.get(
        reverse("admin:payments_dispute_change", args=[second.object_id])
    ).content.decode()
    assert "Held by bob since 12:00:00 UTC, until 13:00:00 UTC, in Dispute review." in held
