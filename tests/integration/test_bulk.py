"""Bulk money actions through the API: preview, out-of-band confirmation, execution, audit."""

from __future__ import annotations

import io
import threading
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core import signing
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.db import connection
from django_otp.plugins.otp_totp.models import TOTPDevice

from litejobs import bulk, workqueues
from litejobs.bulk import BulkRefused, BulkSetChanged, devices
from litejobs.bulk.preview import read as read_preview
from litejobs.exceptions import TransitionRefused
from litejobs.jobs import operations
from litejobs.models import (
    BulkAction,
    BulkActionItem,
    BulkConfirmationAttempt,
    Job,
    JobState,
    WorkItem,
)
from litejobs.workqueues import WorkQueueForbidden
from tests.bulk_helpers import expired_code, fresh_code, item_of, wrong_code
from tests.factories import TOTPDeviceFactory, UserFactory
from tests.testapp.factories import FinanceFactory, PayoutFactory
from tests.testapp.models import Payout

ACTION = "payouts.release"


def payouts_set():
    """Three EUR payouts and two USD ones, queued."""
    amounts = [("1900.00", "EUR"), ("800.50", "EUR"), ("120.00", "EUR"), ("75.25", "USD")]
    amounts.append(("1000.00", "USD"))
    return [PayoutFactory(amount=amount, currency=currency) for amount, currency in amounts]


def ids_of(payouts):
    return [item_of(payout).pk for payout in payouts]


def device_of(user) -> TOTPDevice:
    return TOTPDevice.objects.get(user=user)


def nothing_moved():
    assert not BulkAction.objects.exists()
    assert not Job.objects.filter(name=bulk.ITEM_JOB).exists()
    assert set(Payout.objects.values_list("state", flat=True)) <= {"pending"}


# Preview ---------------------------------------------------------------------------------------


def test_the_preview_lists_every_item_with_its_amount_the_count_and_totals_per_currency(
    finance, clock
):
    payouts = payouts_set()
    made = bulk.preview(ACTION, ids_of(payouts), finance)

    assert made.count == 5
    assert [(line.label, line.amount, line.currency) for line in made.lines] == [
        (str(p), p.amount, p.currency) for p in payouts
    ]
    assert made.totals == (("EUR", Decimal("2820.50")), ("USD", Decimal("1075.25")))
    assert made.totals_text() == "EUR 2,820.50 · USD 1,075.25"
    assert made.digest == bulk.digest_of(ACTION, made.lines)
    assert len(made.digest) == 64
    nothing_moved()  # a preview executes nothing
    assert not BulkConfirmationAttempt.objects.exists()


def test_the_preview_shows_and_binds_who_gets_paid(finance, clock):
    payout = PayoutFactory(payee="Casa Verde", account="DE00 5001 0517 0000 0000 03")
    made = bulk.preview(ACTION, [item_of(payout).pk], finance)
    [line] = made.lines
    assert line.bound == (("account", "DE00 5001 0517 0000 0000 03"), ("payee", "Casa Verde"))
    assert bulk.bound_text(line.bound) == "account: DE00 5001 0517 0000 0000 03 · payee: Casa Verde"


def test_the_preview_leaves_out_items_that_cannot_be_acted_on_and_says_why(finance, clock):
    kept, closed, held, gone = (PayoutFactory() for _ in range(4))
    bob = UserFactory(username="bob", permissions=["testapp.review_payout"])
    workqueues.claim(item_of(held), bob)
    closed_id = item_of(closed).pk
    workqueues.resolve(closed_id, bob, "rejected")
    gone_id = item_of(gone).pk
    WorkItem.objects.filter(pk=gone_id).delete()

    made = bulk.preview(ACTION, [item_of(kept).pk, closed_id, item_of(held).pk, gone_id], finance)

    assert [line.object_id for line in made.lines] == [str(kept.pk)]
    reasons = {left.work_item_id: left for left in made.excluded}
    assert reasons[closed_id].code == "item-closed"
    assert "done (Reject) by bob" in reasons[closed_id].reason
    assert reasons[item_of(held).pk].code == "claim-held"
    assert "held by bob" in reasons[item_of(held).pk].reason
    assert reasons[gone_id].code == "item-not-found"


def test_bad_selections_are_refused(finance):
    with pytest.raises(Exception) as empty:
        bulk.preview(ACTION, [], finance)
    assert empty.value.code == "selection-empty"
    with pytest.raises(Exception) as large:
        bulk.preview(ACTION, range(bulk.ACTION_LIMIT + 1), finance)
    assert large.value.code == "selection-too-large"


# Who may start it ------------------------------------------------------------------------------


def test_a_user_without_the_permission_cannot_start_the_action(db, clock):
    payout = PayoutFactory()
    reviewer = UserFactory(
        username="rita", permissions=["testapp.review_payout"]
    )  # sees the queue, may not release
    TOTPDeviceFactory(user=reviewer)
    with pytest.raises(BulkRefused) as refused:
        bulk.preview(ACTION, [item_of(payout).pk], reviewer)
    assert refused.value.code == "bulk-forbidden"
    assert "testapp.release_payout" in str(refused.value)

    outsider = UserFactory(
        username="otto", permissions=["testapp.release_payout"]
    )  # the action's, not the queue's
    TOTPDeviceFactory(user=outsider)
    with pytest.raises(WorkQueueForbidden):
        bulk.preview(ACTION, [item_of(payout).pk], outsider)
    assert bulk.unavailable_reason(bulk.get_action(ACTION), outsider)
    nothing_moved()


def test_a_user_without_a_confirmed_device_cannot_start_the_action_and_is_told_how(db, clock):
    payout = PayoutFactory()
    phoneless = FinanceFactory(username="pia", device=None)
    TOTPDeviceFactory(user=phoneless, confirmed=False)  # an unconfirmed device does not count
    with pytest.raises(BulkRefused) as refused:
        bulk.preview(ACTION, [item_of(payout).pk], phoneless)
    assert refused.value.code == "bulk-device-missing"
    assert "TOTP device" in str(refused.value) and "Add" in str(refused.value)
    assert "TOTP device" in bulk.unavailable_reason(bulk.get_action(ACTION), phoneless)
    nothing_moved()


def test_a_device_removed_after_the_preview_refuses_the_confirmation(finance, clock):
    made = bulk.preview(ACTION, ids_of(payouts_set()), finance)
    code = fresh_code(device_of(finance))
    TOTPDevice.objects.filter(user=finance).delete()
    with pytest.raises(BulkRefused) as refused:
        bulk.confirm(made.token, code, finance)
    assert refused.value.code == "bulk-device-missing"
    nothing_moved()
    assert BulkConfirmationAttempt.objects.get().result == "bulk-device-missing"


# Codes -----------------------------------------------------------------------------------------


def refused_code(finance, made, code) -> BulkRefused:
    with pytest.raises(BulkRefused) as refused:
        bulk.confirm(made.token, code, finance, remote_addr="10.0.0.7")
    return refused.value


def test_no_payout_moves_without_a_valid_code_and_the_wrong_code_is_audited(finance, clock):
    made = bulk.preview(ACTION, ids_of(payouts_set()), finance)
    device = device_of(finance)
    code = wrong_code(device)

    refused = refused_code(finance, made, code)

    assert refused.code == "bulk-code-invalid"
    assert code not in str(refused)
    nothing_moved()
    attempt = BulkConfirmationAttempt.objects.get()
    assert (attempt.username, attempt.action, attempt.result) == (
        "fiona",
        ACTION,
        "bulk-code-invalid",
    )
    assert attempt.device == device.persistent_id and attempt.device_name == "finance phone"
    assert (attempt.digest, attempt.item_count) == (made.digest, 5)
    assert attempt.confirmation == made.confirmation
    assert attempt.remote_addr == "10.0.0.7" and attempt.bulk_action is None
    stored = " ".join(str(v) for v in BulkConfirmationAttempt.objects.values().get().values())
    assert code not in stored  # the code typed is never kept
    assert device_of(finance).throttling_failure_count == 1  # django-otp counted it

    for empty in ("", "   "):
        TOTPDevice.objects.update(throttling_failure_timestamp=None, throttling_failure_count=0)
        assert refused_code(finance, made, empty).code == "bulk-code-missing"
    nothing_moved()


def test_an_expired_code_is_refused(finance, clock):
    made = bulk.preview(ACTION, ids_of(payouts_set()), finance)
    refused = refused_code(finance, made, expired_code(device_of(finance)))
    assert refused.code == "bulk-code-expired"
    assert "expired" in str(refused)
    nothing_moved()


def test_a_code_confirms_once_and_a_reused_code_is_refused(finance, clock):
    payouts = payouts_set()
    first = bulk.preview(ACTION, ids_of(payouts[:2]), finance)
    code = fresh_code(device_of(finance))
    done = bulk.confirm(first.token, code, finance)
    assert done.created and done.bulk_action.item_count == 2

    second = bulk.preview(ACTION, ids_of(payouts[2:]), finance)
    refused = refused_code(finance, second, code)
    assert refused.code == "bulk-code-reused"
    assert "already used" in str(refused)
    assert BulkAction.objects.count() == 1
    assert list(
        BulkConfirmationAttempt.objects.order_by("id").values_list("result", flat=True)
    ) == [
        "confirmed",
        "bulk-code-reused",
    ]
    # A reused code counts as a failure (django-otp throttles it); after the wait, the phone's
    # next code confirms the second preview.
    TOTPDevice.objects.update(throttling_failure_timestamp=None, throttling_failure_count=0)
    assert bulk.confirm(second.token, fresh_code(device_of(finance)), finance).created


def test_throttling_engages_after_repeated_failures_and_lifts_after_the_wait(finance, clock):
    made = bulk.preview(ACTION, ids_of(payouts_set()), finance)
    device = device_of(finance)

    def let_the_wait_pass():
        TOTPDevice.objects.update(
            throttling_failure_timestamp=device_of(finance).throttling_failure_timestamp
            - timedelta(seconds=60)
        )

    for attempt in range(3):  # three wrong codes, each once django-otp's wait has passed
        if attempt:
            let_the_wait_pass()
        assert refused_code(finance, made, wrong_code(device)).code == "bulk-code-invalid"
    assert device_of(finance).throttling_failure_count == 3

    # Now even the right code is refused until the wait (4 s after three failures) is over.
    refused = refused_code(finance, made, fresh_code(device))
    assert refused.code == "bulk-code-throttled"
    assert "next one only in 4 seconds" in str(refused)  # the wait, counted from the throttle
    nothing_moved()
    assert device_of(finance).throttling_failure_count == 3  # a throttled try does not count
    results = list(BulkConfirmationAttempt.objects.order_by("id").values_list("result", flat=True))
    assert results == ["bulk-code-invalid"] * 3 + ["bulk-code-throttled"]

    let_the_wait_pass()
    assert bulk.confirm(made.token, fresh_code(device), finance).created
    assert device_of(finance).throttling_failure_count == 0


# The set is bound to the preview -------------------------------------------------------------


def test_a_set_that_changed_after_the_preview_is_refused_with_a_fresh_preview(finance, clock):
    payouts = payouts_set()
    made = bulk.preview(ACTION, ids_of(payouts), finance)
    bob = UserFactory(username="bob", permissions=["testapp.review_payout"])
    workqueues.resolve(item_of(payouts[0]).pk, bob, "rejected")  # left the queue since
    code = fresh_code(device_of(finance))

    with pytest.raises(BulkSetChanged) as changed:
        bulk.confirm(made.token, code, finance)

    assert changed.value.code == "bulk-set-changed"
    fresh = changed.value.preview
    assert fresh.count == 4 and fresh.digest != made.digest
    assert [left.code for left in fresh.excluded] == ["item-closed"]
    nothing_moved()
    assert BulkConfirmationAttempt.objects.get().result == "bulk-set-changed"
    # The code was not spent on the stale set: it confirms the fresh preview.
    done = bulk.confirm(fresh.token, code, finance)
    assert done.bulk_action.item_count == 4 and done.bulk_action.digest == fresh.digest


def test_an_amount_changed_after_the_preview_is_refused(finance, clock):
    payouts = payouts_set()
    made = bulk.preview(ACTION, ids_of(payouts), finance)
    Payout.objects.filter(pk=payouts[1].pk).update(amount=Decimal("8005.00"))
    with pytest.raises(BulkSetChanged) as changed:
        bulk.confirm(made.token, fresh_code(device_of(finance)), finance)
    assert changed.value.preview.totals[0] == ("EUR", Decimal("10025.00"))
    nothing_moved()


@pytest.mark.parametrize(
    ("field", "value"), [("payee", "Mallory Ltd"), ("account", "GB00 EVIL 0000 0000 0000 66")]
)
def test_a_payee_changed_after_the_preview_is_refused_with_a_fresh_preview(
    finance, clock, field, value
):
    payouts = payouts_set()
    made = bulk.preview(ACTION, ids_of(payouts), finance)
    Payout.objects.filter(pk=payouts[1].pk).update(**{field: value})
    code = fresh_code(device_of(finance))

    with pytest.raises(BulkSetChanged) as changed:
        bulk.confirm(made.token, code, finance)

    nothing_moved()
    assert BulkConfirmationAttempt.objects.get().result == "bulk-set-changed"
    fresh = changed.value.preview
    assert fresh.digest != made.digest and fresh.count == 5
    assert dict(fresh.lines[1].bound)[field] == value  # the fresh preview shows the new payee
    # Confirming the fresh preview records the payee it showed.
    done = bulk.confirm(fresh.token, code, finance)
    item = done.bulk_action.items.get(object_id=str(payouts[1].pk))
    assert item.bound[field] == value


def test_a_tampered_another_users_or_expired_preview_is_refused(finance, clock):
    made = bulk.preview(ACTION, ids_of(payouts_set()), finance)
    code = fresh_code(device_of(finance))
    data = signing.loads(made.token, salt="litejobs.bulk.preview")
    forged = signing.dumps({**data, "i": data["i"][:1]}, salt="other", compress=True)
    for token in (forged, made.token[:-3] + "abc", "garbage"):
        with pytest.raises(BulkRefused) as refused:
            bulk.confirm(token, code, finance)
        assert refused.value.code == "bulk-preview-invalid"
    other = FinanceFactory(username="frank")
    with pytest.raises(BulkRefused) as theirs:
        bulk.confirm(made.token, fresh_code(device_of(other)), other)
    assert theirs.value.code == "bulk-preview-invalid"

    clock.advance(bulk.PREVIEW_LIFETIME + timedelta(seconds=1))
    with pytest.raises(BulkRefused) as old:
        bulk.confirm(made.token, code, finance)
    assert old.value.code == "bulk-preview-expired"
    nothing_moved()
    assert device_of(finance).last_t == -1  # no code was spent on any of them
    audited = BulkConfirmationAttempt.objects.values_list("result", flat=True)
    assert sorted(audited) == ["bulk-preview-expired"] + ["bulk-preview-invalid"] * 4


# Execution -------------------------------------------------------------------------------------


def confirmed(finance, payouts) -> BulkAction:
    made = bulk.preview(ACTION, ids_of(payouts), finance)
    return bulk.confirm(made.token, fresh_code(device_of(finance)), finance).bulk_action


@pytest.mark.django_db(transaction=True)
def test_a_confirmed_action_is_recorded_and_each_item_is_paid_once_by_its_own_job(
    finance, clock, run_worker
):
    payouts = payouts_set()
    item_ids = ids_of(payouts)
    record = confirmed(finance, payouts)

    assert (record.action, record.queue, record.username, record.user) == (
        ACTION,
        "payouts",
        "fiona",
        finance,
    )
    assert record.device == device_of(finance).persistent_id
    assert record.totals == {"EUR": "2820.50", "USD": "1075.25"}
    assert record.confirmed_at == clock.now()
    jobs = Job.objects.filter(name=bulk.ITEM_JOB).order_by("id")
    assert sorted(job.key for job in jobs) == sorted(
        f"bulk:{ACTION}:{item_id}:{record.pk}" for item_id in item_ids
    )
    assert set(Payout.objects.values_list("state", flat=True)) == {"pending"}  # not yet

    run_worker()

    for payout in Payout.objects.all():
        assert (payout.state, payout.paid_by_bulk_action_id) == ("paid", record.pk)
    items = list(record.items.order_by("id"))
    assert [item.state for item in items] == ["succeeded"] * 5
    assert all(item.attempts == 1 and item.finished_at for item in items)
    assert items[0].note == "paid EUR 1,900.00 to Acme"
    assert items[0].bound == {"account": "DE00 1111 2222 3333 4444 55", "payee": "Acme"}
    assert bulk.summary(record).status == "succeeded"
    for item_id in item_ids:  # each payout left the queue, released by fiona
        work_item = WorkItem.objects.get(pk=item_id)
        assert (work_item.state, work_item.resolution) == ("done", "released")
        assert (work_item.resolved_by_id, work_item.resolved_by_name) == (finance.pk, "fiona")


@pytest.mark.django_db(transaction=True)
def test_a_replayed_item_job_moves_no_money_twice(finance, clock, run_worker):
    payouts = payouts_set()
    record = confirmed(finance, payouts)
    run_worker()
    job = Job.objects.filter(name=bulk.ITEM_JOB).first()
    operations.requeue(job.pk, by="test")  # the same job, run again
    bulk.run_bulk_item.enqueue(  # and the same key enqueued again after it finished
        action=ACTION, item=job.payload["item"], confirmation=record.pk, entry=job.payload["entry"]
    )
    run_worker()
    assert Payout.objects.filter(state="paid").count() == 5
    assert set(Payout.objects.values_list("paid_by_bulk_action", flat=True)) == {record.pk}
    assert list(record.items.values_list("state", flat=True)) == ["succeeded"] * 5


@pytest.mark.django_db(transaction=True)
def test_a_double_submit_of_one_confirmation_executes_each_item_once(finance, clock, run_worker):
    payouts = payouts_set()
    made = bulk.preview(ACTION, ids_of(payouts), finance)
    code = fresh_code(device_of(finance))
    first = bulk.confirm(made.token, code, finance)
    second = bulk.confirm(made.token, code, finance)  # the browser sent the form twice

    assert first.created and not second.created
    assert second.bulk_action.pk == first.bulk_action.pk
    assert Job.objects.filter(name=bulk.ITEM_JOB).count() == 5
    run_worker()
    assert Payout.objects.filter(state="paid").count() == 5
    assert BulkActionItem.objects.count() == 5
    results = list(BulkConfirmationAttempt.objects.order_by("id").values_list("result", flat=True))
    assert results == ["confirmed", "already-confirmed"]


@pytest.mark.django_db(transaction=True)
def test_two_simultaneous_submits_of_one_confirmation_create_one_record(clock):
    finance = FinanceFactory()
    payouts = payouts_set()
    made = bulk.preview(ACTION, ids_of(payouts), finance)
    code = fresh_code(device_of(finance))
    answers, errors = [], []
    start = threading.Barrier(2)

    def submit():
        try:
            start.wait()
            answers.append(bulk.confirm(made.token, code, finance))
        except Exception as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=submit) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    assert sorted(answer.created for answer in answers) == [False, True]
    assert BulkAction.objects.count() == 1
    assert Job.objects.filter(name=bulk.ITEM_JOB).count() == 5


def test_items_already_being_executed_are_left_out_of_a_new_preview(finance, clock):
    payouts = payouts_set()
    record = confirmed(finance, payouts[:2])
    made = bulk.preview(ACTION, ids_of(payouts), finance)
    assert made.count == 3
    assert {left.code for left in made.excluded} == {"bulk-item-pending"}
    assert f"bulk action #{record.pk}" in made.excluded[0].reason


@pytest.mark.django_db(transaction=True)
def test_a_failed_item_keeps_its_error_and_can_be_retried_alone(finance, clock, run_worker):
    payouts = payouts_set()
    record = confirmed(finance, payouts)
    Payout.objects.filter(pk=payouts[0].pk).update(amount=Decimal("9999.00"))  # after confirming
    run_worker()

    failed = record.items.get(object_id=str(payouts[0].pk))
    assert failed.state == "failed" and failed.error_code == "bulk-amount-changed"
    assert "not the confirmed EUR 1,900.00" in failed.error
    assert Payout.objects.get(pk=payouts[0].pk).state == "pending"  # nothing moved for it
    assert item_of(payouts[0]).state == "open"  # still in the queue
    assert Job.objects.get(pk=failed.job_id).state == JobState.DEAD
    assert record.items.filter(state="succeeded").count() == 4
    assert bulk.summary(record).status == "failed"

    with pytest.raises(BulkRefused) as not_failed:
        bulk.retry_item(record.items.filter(state="succeeded").first(), finance)
    assert not_failed.value.code == "bulk-item-not-failed"
    outsider = UserFactory(username="rita", permissions=["testapp.review_payout"])
    with pytest.raises(BulkRefused):
        bulk.retry_item(failed, outsider)

    Payout.objects.filter(pk=payouts[0].pk).update(amount=Decimal("1900.00"))  # fixed
    retried = bulk.retry_item(failed, finance)
    assert retried.state == "pending" and retried.job_id == failed.job_id  # the same job
    run_worker()
    failed.refresh_from_db()
    assert failed.state == "succeeded" and failed.error == ""
    assert Payout.objects.filter(state="paid").count() == 5
    assert bulk.summary(record).status == "succeeded"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("field", "value"), [("payee", "Mallory Ltd"), ("account", "GB00 EVIL 0000 0000 0000 66")]
)
def test_a_payee_changed_after_the_confirmation_is_refused_at_execution_and_not_paid(
    finance, clock, run_worker, field, value
):
    payouts = payouts_set()
    record = confirmed(finance, payouts)
    Payout.objects.filter(pk=payouts[2].pk).update(**{field: value})  # before its job runs
    run_worker()

    refused = record.items.get(object_id=str(payouts[2].pk))
    assert (refused.state, refused.error_code) == ("failed", "bulk-binding-changed")
    assert f"{field} changed since it was confirmed: nothing moved" in refused.error
    assert value not in refused.error
    # The audit keeps the payee the code confirmed, not the new one.
    assert refused.bound == {"account": "DE00 1111 2222 3333 4444 55", "payee": "Acme"}
    assert refused.label == str(payouts[2])
    paid = Payout.objects.get(pk=payouts[2].pk)
    assert (paid.state, paid.paid_by_bulk_action_id) == ("pending", None)  # no money moved
    assert item_of(payouts[2]).state == "open"
    assert Job.objects.get(pk=refused.job_id).state == JobState.DEAD
    assert Payout.objects.filter(state="paid").count() == 4

    # A retry checks again: still changed, still refused.
    bulk.retry_item(refused, finance)
    run_worker()
    refused.refresh_from_db()
    assert (refused.state, refused.error_code) == ("failed", "bulk-binding-changed")
    assert Payout.objects.get(pk=payouts[2].pk).state == "pending"


@pytest.mark.django_db(transaction=True)
def test_a_generic_job_retry_of_a_bulk_item_is_refused_and_names_the_bulk_retry(
    finance, clock, run_worker
):
    payouts = payouts_set()
    record = confirmed(finance, payouts[:1])
    Payout.objects.filter(pk=payouts[0].pk).update(amount=Decimal("9999.00"))
    run_worker()
    failed = record.items.get()
    assert failed.state == "failed"
    Payout.objects.filter(pk=payouts[0].pk).update(amount=Decimal("1900.00"))

    with pytest.raises(TransitionRefused) as refused:
        operations.retry(failed.job_id, by="ops")
    assert refused.value.code == "bulk-retry-required"
    assert f"bulk money action #{record.pk}" in str(refused.value)
    assert "Retry this item" in str(refused.value)
    err = io.StringIO()
    with pytest.raises(SystemExit) as exited:  # manage.py litejobs retry: exit 1, the code
        call_command("litejobs", "retry", str(failed.job_id), stderr=err, stdout=io.StringIO())
    assert exited.value.code == 1 and err.getvalue().startswith("[bulk-retry-required]")
    run_worker()
    assert Payout.objects.get(pk=payouts[0].pk).state == "pending"  # nothing ran
    assert Job.objects.get(pk=failed.job_id).state == JobState.DEAD


@pytest.mark.django_db(transaction=True)
def test_a_cancelled_item_job_fails_its_item_which_the_action_can_retry(finance, clock, run_worker):
    payouts = payouts_set()
    record = confirmed(finance, payouts[:2])
    cancelled = record.items.get(object_id=str(payouts[0].pk))
    # The jobs admin's "Cancel selected jobs" and `litejobs cancel` run this.
    operations.cancel(cancelled.job_id, by="ops")
    run_worker()

    cancelled.refresh_from_db()
    assert (cancelled.state, cancelled.error_code) == ("failed", "bulk-item-cancelled")
    assert "was cancelled before the item was paid: nothing moved" in cancelled.error
    assert cancelled.finished_at == clock.now()
    assert Payout.objects.get(pk=payouts[0].pk).state == "pending"
    assert bulk.summary(record).status == "failed"  # not "executing" for ever
    # The action's own retry pays it, under the same confirmation.
    bulk.retry_item(cancelled, finance)
    run_worker()
    cancelled.refresh_from_db()
    assert cancelled.state == "succeeded"
    assert Payout.objects.filter(state="paid").count() == 2
    assert bulk.summary(record).status == "succeeded"


@pytest.mark.django_db(transaction=True)
def test_an_item_whose_job_ends_dead_unrecorded_is_failed_and_previewed_again(finance, clock):
    """An attempt abandoned past its timeout ends its job dead without the item's own record
    (its transaction rolled back): the item is failed, not pending for ever."""
    payouts = payouts_set()
    record = confirmed(finance, payouts[:1])
    item = record.items.get()
    with connection.cursor() as cursor:  # what the worker writes for an abandoned last attempt
        cursor.execute(
            "UPDATE litejobs_job SET state = 'dead', error_class = 'litejobs.Timeout', "
            "finished_at = %s WHERE id = %s",
            [clock.now(), item.job_id],
        )
    item.refresh_from_db()
    assert (item.state, item.error_code) == ("failed", "bulk-item-job-dead")
    assert "ended dead without recording the item (litejobs.Timeout)" in item.error
    assert bulk.summary(record).status == "failed"
    # A new preview offers the payout again: its earlier item is finished.
    assert [
        line.work_item_id for line in bulk.preview(ACTION, ids_of(payouts[:1]), finance).lines
    ] == [item.work_item_id]


@pytest.mark.django_db(transaction=True)
def test_an_item_that_is_not_pending_executes_nothing_when_its_job_runs(finance, clock, run_worker):
    payouts = payouts_set()
    record = confirmed(finance, payouts[:1])
    Payout.objects.filter(pk=payouts[0].pk).update(amount=Decimal("9999.00"))
    run_worker()
    failed = record.items.get()
    Payout.objects.filter(pk=payouts[0].pk).update(amount=Decimal("1900.00"))
    # The item's job sent back to ready by anything but the bulk retry (its item stays failed).
    operations.requeue(failed.job_id, by="someone")
    run_worker()

    job = Job.objects.get(pk=failed.job_id)
    assert job.state == JobState.DEAD and "[bulk-item-not-pending]" in job.error_message
    assert Payout.objects.get(pk=payouts[0].pk).state == "pending"
    failed.refresh_from_db()
    assert (failed.state, failed.error_code) == ("failed", "bulk-amount-changed")  # kept


@pytest.mark.django_db(transaction=True)
def test_one_work_item_has_at_most_one_unfinished_bulk_item(finance, clock, run_worker):
    payouts = payouts_set()
    first = confirmed(finance, payouts[:1])
    Payout.objects.filter(pk=payouts[0].pk).update(amount=Decimal("9999.00"))
    run_worker()
    failed = first.items.get()
    assert failed.state == "failed"
    Payout.objects.filter(pk=payouts[0].pk).update(amount=Decimal("1900.00"))
    second = confirmed(finance, payouts[:1])  # the work item is free again: a new action
    assert second.items.get().state == "pending"

    with pytest.raises(BulkRefused) as refused:
        bulk.retry_item(failed, finance)
    assert refused.value.code == "bulk-item-pending"
    assert f"bulk action #{second.pk}" in str(refused.value)
    failed.refresh_from_db()
    assert failed.state == "failed"
    run_worker()
    assert Payout.objects.get(pk=payouts[0].pk).paid_by_bulk_action_id == second.pk


def test_a_confirmation_racing_another_for_the_same_item_is_refused_with_a_fresh_preview(
    finance, clock, monkeypatch
):
    payouts = payouts_set()
    made = bulk.preview(ACTION, ids_of(payouts), finance)
    other = FinanceFactory(username="frank")
    theirs = bulk.preview(ACTION, ids_of(payouts[:1]), other)
    verify = devices.verify

    def meanwhile(device, code):
        # Frank's confirmation of the first payout commits between the read and the insert.
        monkeypatch.setattr(devices, "verify", verify)
        bulk.confirm(theirs.token, fresh_code(device_of(other)), other)
        return verify(device, code)

    monkeypatch.setattr(devices, "verify", meanwhile)
    with pytest.raises(BulkSetChanged) as changed:
        bulk.confirm(made.token, fresh_code(device_of(finance)), finance)
    assert [left.code for left in changed.value.preview.excluded] == ["bulk-item-pending"]
    assert BulkAction.objects.get().username == "frank"
    assert BulkActionItem.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_payout_paid_elsewhere_fails_its_item_without_paying_twice(finance, clock, run_worker):
    payouts = payouts_set()
    first = confirmed(finance, payouts[:1])
    run_worker()
    # Someone re-opens the paid payout's item by hand and releases it again.
    workqueues.enqueue_item("payouts", payouts[0])
    second = confirmed(finance, payouts[:1])
    run_worker()
    item = second.items.get()
    assert item.state == "failed" and "was already paid by bulk action" in item.error
    assert Payout.objects.get(pk=payouts[0].pk).paid_by_bulk_action_id == first.pk


def test_the_records_cannot_be_edited_or_deleted(finance, clock):
    from django.db import DatabaseError, transaction

    record = confirmed(finance, payouts_set())
    for change in (
        lambda: BulkAction.objects.filter(pk=record.pk).update(digest="0" * 64),
        lambda: BulkAction.objects.filter(pk=record.pk).delete(),
        lambda: BulkActionItem.objects.filter(bulk_action=record).update(amount=Decimal(1)),
        lambda: BulkConfirmationAttempt.objects.update(result="confirmed-by-hand"),
        lambda: BulkConfirmationAttempt.objects.all().delete(),
    ):
        with pytest.raises(DatabaseError), transaction.atomic():
            change()
    item = record.items.first()
    BulkActionItem.objects.filter(pk=item.pk).update(state="succeeded")
    with pytest.raises(DatabaseError), transaction.atomic():
        BulkActionItem.objects.filter(pk=item.pk).update(state="pending")  # paid stays paid


# Declarations and checks -----------------------------------------------------------------------


def test_amount_answers_that_are_not_money_are_refused(finance, clock):
    action = bulk.get_action(ACTION)
    payout = PayoutFactory()
    for answer in (
        (1.5, "EUR"),
        (Decimal("-1"), "EUR"),
        (Decimal("1.1234567"), "EUR"),
        (Decimal("1"), "eur"),
        (Decimal("NaN"), "EUR"),
        "12 EUR",
    ):
        declared = bulk.BulkMoneyAction(**{**action.__dict__, "amount": lambda row, a=answer: a})
        with pytest.raises(Exception) as refused:
            declared.amount_of(payout)
        assert refused.value.code == "bulk-amount-invalid"


def test_bind_answers_that_cannot_be_bound_are_refused(finance, clock):
    action = bulk.get_action(ACTION)
    payout = PayoutFactory()
    for bind in (
        lambda row: "Acme",
        lambda row: {1: "x"},
        lambda row: {"payee": "x" * 501},
        lambda row: {f"n{i}": i for i in range(11)},
        ("no_such_field",),
    ):
        declared = bulk.BulkMoneyAction(**{**action.__dict__, "bind": bind})
        with pytest.raises(Exception) as refused:
            declared.bound_of(payout)
        assert refused.value.code == "bulk-binding-invalid"
    declared = bulk.BulkMoneyAction(
        **{**action.__dict__, "bind": lambda row: {"payee": row.payee, "n": 2, "none": None}}
    )
    assert declared.bound_of(payout) == {"n": "2", "none": None, "payee": "Acme"}


def test_an_action_binding_an_unknown_field_is_a_check_error(db):
    bulk.bulk_money_action(
        "tests.unbound",
        queue="payouts",
        amount=lambda row: (row.amount, "EUR"),
        bind=("payee", "iban"),
        execute=lambda row, run: None,
        permission="testapp.release_payout",
    )
    try:
        errors = [e for e in run_checks(tags=["litejobs"]) if e.id == "litejobs.E012"]
        assert len(errors) == 1 and "[bulk-binding-invalid]" in errors[0].msg
        assert "'iban'" in errors[0].msg and "'payee'" not in errors[0].msg
    finally:
        bulk.unregister("tests.unbound")


def test_an_action_on_an_undeclared_queue_is_a_check_error(db):
    bulk.bulk_money_action(
        "tests.nowhere",
        queue="no-such-queue",
        amount=lambda row: (row.amount, "EUR"),
        bind=("payee",),
        execute=lambda row, run: None,
        permission="testapp.release_payout",
    )
    try:
        errors = [e for e in run_checks(tags=["litejobs"]) if e.id == "litejobs.E012"]
        assert len(errors) == 1 and "no-such-queue" in errors[0].msg
    finally:
        bulk.unregister("tests.nowhere")
    assert not [e for e in run_checks(tags=["litejobs"]) if e.id == "litejobs.E012"]


def test_an_action_that_binds_nothing_is_a_check_error_unless_it_says_why(db):
    def e013():
        return [e for e in run_checks(tags=["litejobs"]) if e.id == "litejobs.E013"]

    assert not e013()  # the test apps' actions bind the payee and the account
    options = {
        "queue": "payouts",
        "amount": lambda row: (row.amount, "EUR"),
        "execute": lambda row, run: None,
        "permission": "testapp.release_payout",
    }
    bulk.bulk_money_action("tests.amount-only", **options)
    try:
        [error] = e013()
        assert "[bulk-binding-missing]" in error.msg and "'tests.amount-only'" in error.msg
        assert "bind=('payee', 'account')" in error.hint and "bind=False" in error.hint
    finally:
        bulk.unregister("tests.amount-only")
    bulk.bulk_money_action(
        "tests.house", bind=False, reason="always pays the house account", **options
    )
    try:
        assert not e013()
    finally:
        bulk.unregister("tests.house")
    with pytest.raises(ImproperlyConfigured) as no_reason:
        bulk.bulk_money_action("tests.why-not", bind=False, **options)
    assert "[bulk-action-invalid]" in str(no_reason.value) and "reason=" in str(no_reason.value)


@pytest.fixture
def amount_only():
    """``tests.amount-only``: an action on the payouts queue that binds nothing (E013)."""
    action = bulk.bulk_money_action(
        "tests.amount-only",
        queue="payouts",
        amount=lambda row: (row.amount, row.currency),
        execute=lambda row, run: None,
        permission="testapp.release_payout",
    )
    yield action
    bulk.unregister("tests.amount-only")


def test_an_action_that_binds_nothing_is_refused_at_preview_and_confirmation(
    finance, clock, amount_only
):
    """Whether or not the worker's system checks ran, nothing is previewed or confirmed."""
    payouts = payouts_set()
    with pytest.raises(BulkRefused) as refused:
        bulk.preview(amount_only.name, ids_of(payouts), finance)
    assert refused.value.code == "bulk-binding-missing"
    assert "bind=(" in str(refused.value) and "litejobs.E013" in str(refused.value)
    assert "binds nothing" in bulk.unavailable_reason(amount_only, finance)
    # A preview made before the declaration lost its binding (read as the preview reads it).
    made = read_preview(amount_only, tuple(ids_of(payouts)), finance)
    with pytest.raises(BulkRefused) as refused:
        bulk.confirm(made.token, fresh_code(device_of(finance)), finance)
    assert refused.value.code == "bulk-binding-missing"
    nothing_moved()
    assert BulkConfirmationAttempt.objects.get().result == "bulk-binding-missing"


def test_a_warning_names_the_setting_that_hides_totp_keys_in_the_admin(db, settings):
    def w060():
        return [e for e in run_checks(tags=["litejobs"]) if e.id == "litejobs.W060"]

    assert not w060()  # the test settings hide them
    settings.OTP_ADMIN_HIDE_SENSITIVE_DATA = False
    [warning] = w060()
    assert "OTP_ADMIN_HIDE_SENSITIVE_DATA = True" in warning.hint
    del settings.OTP_ADMIN_HIDE_SENSITIVE_DATA
    assert len(w060()) == 1  # unset is django-otp's default: shown
