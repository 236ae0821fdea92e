"""Human work queues, the API: declarations, scores, claims as leases, modes and races."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import IntegrityError, connection, transaction

from litejobs import workqueues
from litejobs.exceptions import DeclarationError, InvalidInput, LitejobsError
from litejobs.models import WorkItem, WorkItemState
from litejobs.workqueues import (
    ClaimRefused,
    WorkItemNotFound,
    WorkQueueForbidden,
    WorkQueueNotFound,
    checks,
)
from litejobs.workqueues import declarations as queues
from tests.factories import UserFactory
from tests.testapp.factories import DisputeFactory

pytestmark = pytest.mark.django_db


def refused(code: str):
    """Expect a refusal with this stable code."""
    return pytest.raises(LitejobsError, match=rf"^\[{code}\]")


# Declarations ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "fix"),
    [
        ({"claim": "sometimes"}, "claim= must be one of 'disabled', 'optional', 'required'"),
        ({"claim": None}, "claim= must be one of"),
        ({"claim": "optional", "claim_lease": "0s"}, "claim_lease= must be positive"),
        ({"claim": "optional", "claim_lease": "30d"}, "between 10 seconds and 7 days"),
        ({"claim": "optional", "permission": "review disputes"}, "'app_label.codename'"),
        ({"claim": "optional", "model": "payments.Nope"}, "is not an installed model"),
        ({"claim": "optional", "score": "no spaces allowed"}, "the id of a @score_rule"),
        ({"claim": "optional", "resolutions": []}, "non-empty list"),
        ({"claim": "optional", "resolutions": ["ok", "ok"]}, "listed twice"),
        ({"claim": "optional", "resolutions": ["Not OK!"]}, "lower-case letters"),
    ],
)
def test_an_invalid_queue_declaration_is_refused_naming_the_fix(declare_queue, options, fix):
    with pytest.raises(DeclarationError, match=fix) as error:
        declare_queue("bad-queue", **options)
    assert error.value.code == "work-queue-invalid"
    with pytest.raises(WorkQueueNotFound):
        queues.get("bad-queue")


def test_a_queue_must_state_its_claim_mode(declare_queue):
    with pytest.raises(TypeError, match="claim"):
        declare_queue("no-mode")


def test_a_score_rule_must_take_the_row_and_have_one_declaration():
    with pytest.raises(DeclarationError, match="exactly one positional argument"):
        queues.score_rule("test.two-args")(lambda a, b: (1, {"a": 1}))
    with pytest.raises(DeclarationError, match="declared twice"):
        queues.score_rule("dispute.urgency")(lambda row: (1, {"a": "b"}))


def test_a_queue_citing_an_unknown_rule_is_a_system_check_error(declare_queue):
    declare_queue("orphan", claim="optional", score="nobody.declares-this")
    errors = checks.check_work_queues()
    assert [e.id for e in errors] == ["litejobs.E011"]
    assert "nobody.declares-this" in errors[0].msg and "[score-rule-unknown]" in errors[0].msg
    with pytest.raises(SystemCheckError, match=r"litejobs\.E011"):
        call_command("check")
    with refused("score-rule-unknown"):
        workqueues.enqueue_item("orphan", DisputeFactory())


def test_a_broken_queues_module_is_reported_by_the_checks_not_at_startup(monkeypatch):
    error = DeclarationError("Work queue 'x': claim= must be ...", code="work-queue-invalid")
    monkeypatch.setattr(queues.discovery, "_errors", [("tests.badqueues.queues", error)])
    [found] = checks.check_work_queues()
    assert found.id == "litejobs.E010"
    assert found.msg.startswith("tests.badqueues.queues: [work-queue-invalid]")


# Scores and order -------------------------------------------------------------------------


def test_enqueue_scores_the_row_and_keeps_the_inputs_in_order(clock):
    dispute = DisputeFactory(amount="1900", days=6, evidence_provided=False)
    item = workqueues.enqueue_item("disputes", dispute)
    assert item.created
    assert item.state == WorkItemState.OPEN
    assert item.score == 82  # 38 for EUR 1,900 + 24 for 6 days + 20 for missing evidence
    assert item.score_rule == "dispute.urgency"
    assert item.score_inputs == [
        ["amount", "EUR 1,900"],
        ["age", "6 days"],
        ["evidence", "evidence missing"],
    ]
    stored = WorkItem.objects.get(pk=item.pk)
    assert stored.target == dispute
    assert stored.score_inputs == item.score_inputs  # the order survives jsonb


def test_one_live_item_per_row_and_queue_enqueueing_again_rescores_it(clock):
    dispute = DisputeFactory(amount="100", days=1)
    first = workqueues.enqueue_item("disputes", dispute)
    dispute.evidence_provided = True
    dispute.save()
    clock.advance("2d")
    again = workqueues.enqueue_item("disputes", dispute)
    assert not again.created and again.pk == first.pk
    assert again.score == 2 + 12  # evidence provided now, three days old
    assert WorkItem.objects.filter(object_id=str(dispute.pk)).count() == 1
    with pytest.raises(IntegrityError), transaction.atomic():
        WorkItem.objects.create(
            queue="disputes",
            content_type=first.content_type,
            object_id=first.object_id,
            scored_at=clock.now(),
            created_at=clock.now(),
        )


def test_a_finished_item_frees_the_row_for_a_new_one(clock, reviewers):
    alice = reviewers[0]
    dispute = DisputeFactory()
    first = workqueues.enqueue_item("disputes", dispute)
    workqueues.claim(first, alice)
    workqueues.resolve(first, alice, "refund")
    second = workqueues.enqueue_item("disputes", dispute)
    assert second.created and second.pk != first.pk


def test_refresh_score_follows_the_row_and_a_bad_rule_answer_is_refused(clock, declare_queue):
    dispute = DisputeFactory(amount="500", days=0, evidence_provided=True)
    item = workqueues.enqueue_item("disputes", dispute)
    assert item.score == 10
    clock.advance("5d")
    assert workqueues.refresh_score(item.pk).score == 10 + 20
    queues.score_rule("test.broken")(lambda row: "high")
    try:
        declare_queue("broken", claim="disabled", score="test.broken")
        with refused("score-invalid"):
            workqueues.enqueue_item("broken", dispute)
    finally:
        queues.unregister_rule("test.broken")
    assert not WorkItem.objects.filter(queue="broken").exists()


def test_enqueue_refuses_a_row_of_another_model_or_an_unsaved_one(clock):
    with refused("item-target-invalid"):
        workqueues.enqueue_item("disputes", UserFactory(username="dave"))
    with refused("item-target-invalid"):
        workqueues.enqueue_item("disputes", DisputeFactory.build(amount=1))


def test_the_listing_orders_by_score_then_age(clock, reviewers):
    alice = reviewers[0]
    low = workqueues.enqueue_item(
        "disputes", DisputeFactory(amount="50", days=0, evidence_provided=True)
    )
    clock.advance("1h")
    high_old = workqueues.enqueue_item("disputes", DisputeFactory(amount="1900", days=6))
    clock.advance("1h")
    high_new = workqueues.enqueue_item("disputes", DisputeFactory(amount="1900", days=6))
    clock.advance("1h")
    middle = workqueues.enqueue_item("disputes", DisputeFactory(amount="1000", days=0))
    assert high_old.score == high_new.score == 82 > middle.score == 40 > low.score == 1
    page = workqueues.page("disputes", user=alice)
    assert [i.pk for i in page.items] == [high_old.pk, high_new.pk, middle.pk, low.pk]


def test_a_queue_without_a_score_lists_oldest_first(clock, declare_queue, reviewers):
    declare_queue("plain", claim="optional")
    made = []
    for amount in ("10", "5000", "300"):
        made.append(workqueues.enqueue_item("plain", DisputeFactory(amount=amount)))
        clock.advance("1m")
    assert all(item.score == 0 and item.score_inputs == [] for item in made)
    page = workqueues.page("plain", user=reviewers[0])
    assert [i.pk for i in page.items] == [i.pk for i in made]


def test_keyset_pages_cover_the_listing_once_in_order(clock, reviewers):
    items = []
    for n in range(23):
        items.append(
            workqueues.enqueue_item("disputes", DisputeFactory(amount=str(50 * (n % 5)), days=1))
        )
    expected = [i.pk for i in workqueues.items("disputes")]
    seen, cursor = [], None
    while True:
        page = workqueues.page("disputes", after=cursor, limit=5)
        seen += [i.pk for i in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == expected and len(seen) == 23
    with refused("cursor-invalid"):
        workqueues.page("disputes", after="not-a-cursor")


# Claims -----------------------------------------------------------------------------------


def test_a_claim_is_a_lease_that_expires_under_the_injected_clock(clock, reviewers):
    alice, bob, _ = reviewers
    item = workqueues.enqueue_item("disputes", DisputeFactory())
    held = workqueues.claim(item, alice)
    assert held.state == WorkItemState.CLAIMED
    assert held.claimed_by == alice and held.claimed_by_name == "alice"
    assert held.claim_expires_at == clock.now() + timedelta(hours=1)
    with refused("claim-held") as error:
        workqueues.claim(item.pk, bob)
    assert "held by alice until 13:00:00 UTC" in str(error.value)

    clock.advance("59m")
    with refused("claim-held"):
        workqueues.claim(item.pk, bob)
    assert workqueues.status(WorkItem.objects.get(pk=item.pk), bob, clock.now()) == "theirs"

    clock.advance("1m")  # the lease has run out: nobody holds it, though the row says claimed
    row = WorkItem.objects.get(pk=item.pk)
    assert row.state == WorkItemState.CLAIMED
    assert workqueues.status(row, bob, clock.now()) == "open"
    assert [i.pk for i in workqueues.page("disputes", user=bob, view="unclaimed").items] == [
        item.pk
    ]
    assert workqueues.page("disputes", user=alice, view="mine").items == []
    with refused("claim-not-held") as error:
        workqueues.release(item.pk, alice)
    assert "your claim expired at 13:00:00 UTC" in str(error.value)
    with refused("claim-required"):
        workqueues.resolve(item.pk, alice, "refund")

    taken = workqueues.claim(item.pk, bob)
    assert taken.claimed_by == bob and taken.claimed_at == clock.now()


def test_claiming_again_renews_the_holders_lease(clock, reviewers):
    alice = reviewers[0]
    item = workqueues.enqueue_item("disputes", DisputeFactory())
    first = workqueues.claim(item, alice)
    clock.advance("50m")
    renewed = workqueues.claim(item, alice)
    assert renewed.claimed_at == first.claimed_at
    assert renewed.claim_expires_at == clock.now() + timedelta(hours=1)


def test_release_opens_the_item_to_everyone_and_only_the_holder_may(clock, reviewers):
    alice, bob, _ = reviewers
    item = workqueues.enqueue_item("disputes", DisputeFactory())
    workqueues.claim(item, alice)
    with refused("claim-held"):
        workqueues.release(item, bob)
    released = workqueues.release(item, alice)
    assert released.state == WorkItemState.OPEN and released.claimed_by is None
    assert released.claim_expires_at is None
    with refused("claim-not-held"):
        workqueues.release(item, alice)
    assert workqueues.claim(item, bob).claimed_by == bob


def test_required_mode_refuses_an_action_without_the_acting_users_live_claim(clock, reviewers):
    alice, bob, _ = reviewers
    item = workqueues.enqueue_item("disputes", DisputeFactory())
    with refused("claim-required") as error:
        workqueues.resolve(item, alice, "refund")
    assert "requires a claim before any action: claim item" in str(error.value)
    assert WorkItem.objects.get(pk=item.pk).state == WorkItemState.OPEN

    workqueues.claim(item, bob)
    with refused("claim-held") as error:
        workqueues.resolve(item, alice, "refund")
    assert "held by bob" in str(error.value)

    done = workqueues.resolve(item, bob, "contest", note="evidence sent")
    assert done.state == WorkItemState.DONE
    assert (done.resolution, done.resolution_note) == ("contest", "evidence sent")
    assert done.resolved_by == bob and done.resolved_at == clock.now()
    assert done.claimed_by is None and done.claim_expires_at is None
    with refused("item-closed") as error:
        workqueues.resolve(item, bob, "refund")
    assert "already done (Contest) by bob" in str(error.value)


def test_optional_mode_a_claim_is_a_hold_others_cannot_act_through(clock, declare_queue, reviewers):
    alice, bob, _ = reviewers
    declare_queue("optional", claim="optional", resolutions=["approved", "rejected"])
    free = workqueues.enqueue_item("optional", DisputeFactory())
    held = workqueues.enqueue_item("optional", DisputeFactory())
    assert workqueues.resolve(free, alice, "approved").state == WorkItemState.DONE
    workqueues.claim(held, bob)
    with refused("claim-held"):
        workqueues.resolve(held, alice, "approved")
    clock.advance("61m")  # bob's hold ran out
    assert workqueues.resolve(held, alice, "rejected").resolved_by == alice
    with refused("resolution-invalid"):
        workqueues.resolve(workqueues.enqueue_item("optional", DisputeFactory()), alice)


def test_disabled_mode_has_no_claims(clock, declare_queue, reviewers):
    alice = reviewers[0]
    declare_queue("no-claims", claim="disabled")
    item = workqueues.enqueue_item("no-claims", DisputeFactory())
    with refused("claim-disabled"):
        workqueues.claim(item, alice)
    with refused("claim-disabled"):
        workqueues.claim_next("no-claims", alice)
    with refused("claim-disabled"):
        workqueues.release(item, alice)
    assert workqueues.resolve(item, alice).resolution == "resolved"


def test_a_user_without_the_queues_permission_can_do_nothing(clock, reviewers):
    carol = reviewers[2]
    item = workqueues.enqueue_item("disputes", DisputeFactory())
    for attempt in (
        lambda: workqueues.claim(item, carol),
        lambda: workqueues.claim_next("disputes", carol),
        lambda: workqueues.release(item, carol),
        lambda: workqueues.resolve(item, carol, "refund"),
        lambda: workqueues.cancel(item, user=carol, reason="no"),
    ):
        with pytest.raises(WorkQueueForbidden, match=r"testapp\.review_dispute"):
            attempt()
    assert WorkItem.objects.get(pk=item.pk).state == WorkItemState.OPEN
    inactive = UserFactory(username="eve", permissions=["testapp.review_dispute"])
    inactive.is_active = False
    with pytest.raises(WorkQueueForbidden):
        workqueues.claim(item, inactive)


def test_cancel_by_code_ignores_claims_and_by_a_person_follows_them(clock, reviewers):
    alice, bob, _ = reviewers
    first = workqueues.enqueue_item("disputes", DisputeFactory())
    workqueues.claim(first, alice)
    with refused("reason-required"):
        workqueues.cancel(first, reason=" ")
    gone = workqueues.cancel(first, reason="the customer withdrew")
    assert gone.state == WorkItemState.CANCELLED and gone.resolved_by_name == "(code)"
    second = workqueues.enqueue_item("disputes", DisputeFactory())
    workqueues.claim(second, alice)
    with refused("claim-held"):
        workqueues.cancel(second, user=bob, reason="duplicate")
    assert workqueues.cancel(second, user=alice, reason="duplicate").resolved_by == alice


def test_unknown_items_and_queues_are_named(clock, reviewers, declare_queue):
    alice = reviewers[0]
    declare_queue("other", claim="optional")
    with pytest.raises(WorkItemNotFound, match="No work item #999999 in any queue"):
        workqueues.claim(999999, alice)
    item = workqueues.enqueue_item("disputes", DisputeFactory())
    with pytest.raises(WorkItemNotFound, match="in queue 'other'"):
        workqueues.claim(item.pk, alice, queue="other")
    with pytest.raises(WorkQueueNotFound, match="work_queue"):
        workqueues.claim_next("nope", alice)
    with pytest.raises(InvalidInput, match="user-missing"):
        workqueues.claim(item, None)


def test_claim_next_takes_the_most_urgent_unclaimed_item(clock, reviewers):
    alice, bob, _ = reviewers
    low = workqueues.enqueue_item(
        "disputes", DisputeFactory(amount="10", days=0, evidence_provided=True)
    )
    high = workqueues.enqueue_item("disputes", DisputeFactory(amount="1900", days=6))
    assert workqueues.claim_next("disputes", alice).pk == high.pk
    assert workqueues.claim_next("disputes", bob).pk == low.pk
    assert workqueues.claim_next("disputes", bob) is None
    clock.advance("2h")  # both leases ran out: the items are back, most urgent first
    assert workqueues.claim_next("disputes", bob).pk == high.pk


# Database guards --------------------------------------------------------------------------


def test_the_database_refuses_a_finished_item_moving_or_a_claim_without_expiry(clock, reviewers):
    alice = reviewers[0]
    item = workqueues.enqueue_item("disputes", DisputeFactory())
    with pytest.raises(IntegrityError), transaction.atomic():
        WorkItem.objects.filter(pk=item.pk).update(state="claimed", claimed_by=alice)
    workqueues.claim(item, alice)
    workqueues.resolve(item, alice, "refund")
    with pytest.raises(Exception, match="Invalid transition"), transaction.atomic():
        WorkItem.objects.filter(pk=item.pk).update(state="open")
    with pytest.raises(Exception, match="no longer changes"), transaction.atomic():
        WorkItem.objects.filter(pk=item.pk).update(resolution="contest")
    alice.delete()  # deleting a user keeps the record of what they resolved
    row = WorkItem.objects.get(pk=item.pk)
    assert row.resolved_by is None and row.resolved_by_name == "alice"


# Races ------------------------------------------------------------------------------------


def run_together(count: int, action) -> list:
    """Run ``action(i)`` in ``count`` threads released at once; answers results or errors."""
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = action(i)
        except Exception as error:  # the test inspects every outcome
            results[i] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


@pytest.mark.django_db(transaction=True)
def test_many_people_claiming_one_item_at_once_exactly_one_wins(clock):
    people = [
        UserFactory(username=f"reviewer{i}", permissions=["testapp.review_dispute"])
        for i in range(12)
    ]
    item = workqueues.enqueue_item("disputes", DisputeFactory())
    results = run_together(len(people), lambda i: workqueues.claim(item.pk, people[i]))
    winners = [r for r in results if isinstance(r, WorkItem)]
    losers = [r for r in results if isinstance(r, ClaimRefused)]
    assert len(winners) == 1 and len(losers) == len(people) - 1
    assert {error.code for error in losers} == {"claim-held"}
    stored = WorkItem.objects.get(pk=item.pk)
    assert stored.claimed_by_id == winners[0].claimed_by_id


@pytest.mark.django_db(transaction=True)
def test_many_people_resolving_one_open_item_at_once_resolve_it_once(clock, declare_queue):
    declare_queue("race-optional", claim="optional")
    people = [
        UserFactory(username=f"reviewer{i}", permissions=["testapp.review_dispute"])
        for i in range(8)
    ]
    item = workqueues.enqueue_item("race-optional", DisputeFactory())
    results = run_together(len(people), lambda i: workqueues.resolve(item.pk, people[i]))
    winners = [r for r in results if isinstance(r, WorkItem)]
    assert len(winners) == 1
    assert {r.code for r in results if not isinstance(r, WorkItem)} == {"item-closed"}
    assert WorkItem.objects.get(pk=item.pk).resolved_by_id == winners[0].resolved_by_id


@pytest.mark.django_db(transaction=True)
def test_people_asking_for_the_next_item_at_once_get_different_items(clock):
    people = [
        UserFactory(username=f"reviewer{i}", permissions=["testapp.review_dispute"])
        for i in range(8)
    ]
    items = [
        workqueues.enqueue_item("disputes", DisputeFactory(amount=str(i * 10))) for i in range(5)
    ]
    results = run_together(len(people), lambda i: workqueues.claim_next("disputes", people[i]))
    taken = [r.pk for r in results if isinstance(r, WorkItem)]
    assert sorted(taken) == sorted(i.pk for i in items)  # each item once, none twice
    assert results.count(None) == 3


# Tenants and retention ---------------------------------------------------------------------


def test_tenants_filter_the_listing_and_the_next_claim(clock, reviewers):
    alice = reviewers[0]
    berlin = workqueues.enqueue_item("disputes", DisputeFactory(amount="10"), tenant="berlin")
    paris = workqueues.enqueue_item("disputes", DisputeFactory(amount="1900"), tenant="paris")
    assert [i.pk for i in workqueues.page("disputes", tenant="berlin").items] == [berlin.pk]
    assert workqueues.claim_next("disputes", alice, tenant="berlin").pk == berlin.pk
    assert workqueues.claim_next("disputes", alice, tenant="berlin") is None
    assert WorkItem.objects.get(pk=paris.pk).state == WorkItemState.OPEN
    with refused("tenant-invalid"):
        workqueues.enqueue_item("disputes", DisputeFactory(), tenant="x" * 201)


def test_purge_removes_finished_items_past_the_retention_in_batches(clock, reviewers):
    alice = reviewers[0]
    old = [workqueues.enqueue_item("disputes", DisputeFactory()) for _ in range(5)]
    for item in old[:4]:
        workqueues.claim(item, alice)
        workqueues.resolve(item, alice, "refund")
    clock.advance("31d")
    recent = workqueues.enqueue_item("disputes", DisputeFactory())
    workqueues.cancel(recent, reason="withdrawn")
    assert workqueues.purge(older_than="30d", batch=3) == 4
    left = set(WorkItem.objects.values_list("pk", flat=True))
    assert left == {old[4].pk, recent.pk}  # the live item and the recent one stay
