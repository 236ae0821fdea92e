"""Bulk money actions in the admin: the queue page's button, the preview, the code, the record."""

from __future__ import annotations

import html as html_text
import io
import json
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db.models import F
from django.urls import reverse
from django_otp.plugins.otp_totp.models import TOTPDevice

from litejobs import bulk
from litejobs.models import BulkAction, BulkConfirmationAttempt, Job
from tests.bulk_helpers import fresh_code, item_of, wrong_code
from tests.factories import TOTPDeviceFactory, UserFactory
from tests.testapp.factories import FinanceFactory, PayoutFactory
from tests.testapp.models import Payout

QUEUE = reverse("admin:litejobs_workitem_queue", kwargs={"queue": "payouts"})
PREVIEW = reverse("admin:litejobs_bulkaction_preview", kwargs={"action": "payouts.release"})
CONFIRM = reverse("admin:litejobs_bulkaction_confirm", kwargs={"action": "payouts.release"})


def signed_in(client, user):
    client.force_login(user)
    return client


def preview_page(client, payouts):
    return client.post(PREVIEW, {"item": [item_of(p).pk for p in payouts]})


def token_of(response) -> str:
    return response.context["preview"].token


@pytest.mark.django_db
def test_the_queue_page_offers_the_action_to_finance_only(client, clock):
    PayoutFactory()
    page = signed_in(client, FinanceFactory()).get(QUEUE).content.decode()
    assert f'formaction="{PREVIEW}"' in page and "Release payouts: preview" in page

    reviewer = UserFactory(
        username="rita", permissions=["testapp.review_payout"]
    )  # may work the queue, not release
    assert "Release payouts" not in signed_in(client, reviewer).get(QUEUE).content.decode()

    phoneless = FinanceFactory(username="pia", device=None)
    page = signed_in(client, phoneless).get(QUEUE).content.decode()
    assert "wq-money-unavailable" in page and f'formaction="{PREVIEW}"' not in page
    assert "no confirmed TOTP device" in page and "TOTP devices" in page  # how to add one


@pytest.mark.django_db
def test_an_action_that_binds_nothing_is_not_offered_and_its_preview_is_refused(client, clock):
    payout = PayoutFactory()
    bulk.bulk_money_action(
        "tests.amount-only",
        queue="payouts",
        amount=lambda row: (row.amount, row.currency),
        execute=lambda row, run: None,
        permission="testapp.release_payout",
        label="Pay amounts only",
    )
    try:
        signed_in(client, FinanceFactory())
        preview = reverse(
            "admin:litejobs_bulkaction_preview", kwargs={"action": "tests.amount-only"}
        )
        page = client.get(QUEUE).content.decode()
        assert f'formaction="{preview}"' not in page and "binds nothing" in page
        refused = client.post(preview, {"item": [item_of(payout).pk]})
        assert refused.status_code == 403
        assert 'data-code="bulk-binding-missing"' in refused.content.decode()
    finally:
        bulk.unregister("tests.amount-only")
    assert not BulkAction.objects.exists()


@pytest.mark.django_db
def test_the_preview_page_lists_every_item_with_amounts_and_totals_and_moves_nothing(
    client, finance, clock
):
    payouts = [
        PayoutFactory(amount="1900.00"),
        PayoutFactory(amount="800.50"),
        PayoutFactory(amount="75.25", currency="USD"),
    ]
    response = preview_page(signed_in(client, finance), payouts)

    assert response.status_code == 200
    page = response.content.decode()
    for payout in payouts:
        assert f'id="bulk-line-{item_of(payout).pk}"' in page
        assert str(payout) in page
    assert "EUR 1,900.00" in page and "EUR 800.50" in page and "USD 75.25" in page
    assert "EUR 2,700.50" in page and "USD 75.25" in page  # totals per currency
    assert '<td id="bulk-count" class="bulk-amount">3</td>' in page
    assert 'name="code"' in page and 'autocomplete="one-time-code"' in page
    assert "Pays each payout to its payee" in page  # what will happen
    assert "paid to" in page  # and who gets paid, where: the values the code binds
    assert '<td class="bulk-bound">account: DE00 1111 2222 3333 4444 55 · payee: Acme</td>' in page
    assert not BulkAction.objects.exists() and not Job.objects.exists()
    assert set(Payout.objects.values_list("state", flat=True)) == {"pending"}


@pytest.mark.django_db
def test_users_who_may_not_start_the_action_get_403(client, clock):
    payout = PayoutFactory()
    reviewer = UserFactory(username="rita", permissions=["testapp.review_payout"])
    TOTPDeviceFactory(user=reviewer)
    response = preview_page(signed_in(client, reviewer), [payout])
    assert response.status_code == 403 and "testapp.release_payout" in response.content.decode()

    phoneless = FinanceFactory(username="pia", device=None)
    response = preview_page(signed_in(client, phoneless), [payout])
    assert response.status_code == 403
    assert "no confirmed TOTP device" in response.content.decode()
    assert 'name="code"' not in response.content.decode()

    assert signed_in(client, reviewer).post(CONFIRM, {"token": "x", "code": "1"}).status_code in (
        302,
        403,
    )
    assert not BulkAction.objects.exists()


@pytest.mark.django_db
def test_a_wrong_code_redirects_to_the_preview_which_tells_the_refusal_once(client, finance, clock):
    payouts = [PayoutFactory(), PayoutFactory()]
    client = signed_in(client, finance)
    token = token_of(preview_page(client, payouts))
    device = TOTPDevice.objects.get(user=finance)

    posted = client.post(CONFIRM, {"token": token, "code": wrong_code(device)})

    # Post/redirect/get: the refusal answers a redirect, and reloading its page posts nothing.
    assert posted.status_code == 303 and posted["Location"].startswith(PREVIEW + "?token=")
    response = client.get(posted["Location"])
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="bulk-confirm"' in page
    shown = re.search(r'<li class="error" id="bulk-error"([^>]*)>(.*?)</li>', page, re.S)
    assert 'data-code="bulk-code-invalid"' in shown.group(1)  # kept for operators
    assert shown.group(2) and "[bulk-code-invalid]" not in shown.group(2)  # words only
    assert response.context["preview"].token == token  # the same preview, to try again
    assert not BulkAction.objects.exists()
    assert BulkConfirmationAttempt.objects.get().remote_addr == "127.0.0.1"

    again = client.get(posted["Location"])  # a reload: no second attempt, told once
    assert again.status_code == 200 and 'id="bulk-error"' not in again.content.decode()
    assert BulkConfirmationAttempt.objects.count() == 1
    assert TOTPDevice.objects.get(user=finance).throttling_failure_count == 1


@pytest.mark.django_db(transaction=True)
def test_the_right_code_records_the_action_and_its_page_shows_every_outcome(
    client, clock, run_worker
):
    finance = FinanceFactory()
    payouts = [PayoutFactory(amount="10.00"), PayoutFactory(amount="20.00", currency="USD")]
    client = signed_in(client, finance)
    token = token_of(preview_page(client, payouts))
    code = fresh_code(TOTPDevice.objects.get(user=finance))

    response = client.post(CONFIRM, {"token": token, "code": code})
    record = BulkAction.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:litejobs_bulkaction_change", args=[record.pk])
    page = client.get(response["Location"]).content.decode()
    assert 'data-status="executing"' in page and 'http-equiv="refresh"' in page

    # The double submit lands on the same record, and starts nothing.
    again = client.post(CONFIRM, {"token": token, "code": code})
    assert again["Location"] == response["Location"] and BulkAction.objects.count() == 1

    run_worker()
    page = client.get(response["Location"]).content.decode()
    assert 'data-status="succeeded"' in page and 'http-equiv="refresh"' not in page
    for payout in payouts:
        assert (
            f'id="bulk-item-{item_of_any(payout)}" class="bulk-item" data-state="succeeded"' in page
        )
    assert "EUR 10.00 · USD 20.00" in page and "finance phone" in page
    assert "confirmed" in page and "already-confirmed" in page  # the attempts
    listing = client.get(reverse("admin:litejobs_bulkaction_changelist")).content.decode()
    assert "2 succeeded" in listing


@pytest.mark.django_db
def test_an_item_job_names_its_bulk_action_on_its_page_and_in_show(client, admin_client, clock):
    finance = FinanceFactory()
    client = signed_in(client, finance)
    token = token_of(preview_page(client, [PayoutFactory(amount="10.00")]))
    client.post(CONFIRM, {"token": token, "code": fresh_code(TOTPDevice.objects.get(user=finance))})
    record = BulkAction.objects.get()
    job_id = record.items.get().job_id

    page = admin_client.get(reverse("admin:litejobs_job_change", args=[job_id])).content.decode()
    record_page = reverse("admin:litejobs_bulkaction_change", args=[record.pk])
    assert f'<a href="{record_page}">bulk action {record.pk}</a>' in page
    out = io.StringIO()
    call_command("litejobs", "show", str(job_id), "--json", stdout=out)
    shown = json.loads(out.getvalue())
    assert shown["bulk_action"] == record.pk and shown["outbox_message"] is None


@pytest.mark.django_db
def test_a_single_item_is_counted_in_the_singular_on_the_preview_and_the_confirmation(
    client, finance, clock
):
    client = signed_in(client, finance)
    preview = preview_page(client, [PayoutFactory()])
    assert 'value="Confirm release payouts: 1 item, EUR 100.00"' in preview.content.decode()
    code = fresh_code(TOTPDevice.objects.get(user=finance))
    response = client.post(CONFIRM, {"token": token_of(preview), "code": code}, follow=True)
    shown = [str(m) for m in response.context["messages"]]
    assert any("releases 1 item (" in m for m in shown), shown
    assert "1 items" not in response.content.decode()


@pytest.mark.django_db
def test_the_record_names_the_confirming_device_not_its_internal_id(client, finance, clock):
    client = signed_in(client, finance)
    preview = preview_page(client, [PayoutFactory()])
    code = fresh_code(TOTPDevice.objects.get(user=finance))
    response = client.post(CONFIRM, {"token": token_of(preview), "code": code}, follow=True)
    page = response.content.decode()
    shown = re.search(r'<td id="bulk-device"[^>]*>(.*?)</td>', page).group(1)
    assert shown == "finance phone"
    assert "(otp_totp.totpdevice/" not in page


@pytest.mark.django_db
def test_a_refusal_told_as_a_message_is_in_words_its_code_a_css_class(client, finance, clock):
    response = signed_in(client, finance).post(PREVIEW, {"item": []}, follow=True)
    told = list(response.context["messages"])
    assert [m.extra_tags for m in told] == ["selection-empty"]
    assert not str(told[0]).startswith("[") and str(told[0])


def item_of_any(payout) -> int:
    from litejobs.models import WorkItem

    return WorkItem.objects.get(queue="payouts", object_id=str(payout.pk)).pk


@pytest.mark.django_db
def test_a_changed_set_is_refused_with_a_fresh_preview(client, finance, clock):
    payouts = [PayoutFactory(), PayoutFactory()]
    client = signed_in(client, finance)
    token = token_of(preview_page(client, payouts))
    Payout.objects.filter(pk=payouts[0].pk).update(amount=Decimal("555.00"))

    posted = client.post(
        CONFIRM, {"token": token, "code": fresh_code(TOTPDevice.objects.get(user=finance))}
    )

    assert posted.status_code == 303
    response = client.get(posted["Location"])
    page = response.content.decode()
    assert "bulk-set-changed" in page and "EUR 555.00" in page
    assert response.context["preview"].token != token
    assert not BulkAction.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_failed_item_can_be_retried_from_its_page(client, clock, run_worker):
    finance = FinanceFactory()
    payouts = [PayoutFactory(amount="10.00"), PayoutFactory(amount="20.00")]
    client = signed_in(client, finance)
    token = token_of(preview_page(client, payouts))
    client.post(CONFIRM, {"token": token, "code": fresh_code(TOTPDevice.objects.get(user=finance))})
    Payout.objects.filter(pk=payouts[0].pk).update(amount=Decimal("11.00"))
    run_worker()
    record = BulkAction.objects.get()
    failed = record.items.get(state="failed")
    page = client.get(
        reverse("admin:litejobs_bulkaction_change", args=[record.pk])
    ).content.decode()
    assert "bulk-amount-changed" in page and "Retry this item" in page
    shown = re.search(r'<div class="errornote bulk-item-error"([^>]*)>(.*?)</div>', page)
    assert 'data-code="bulk-amount-changed"' in shown.group(1)  # kept for operators
    assert "not the confirmed EUR 10.00" in shown.group(2) and "[" not in shown.group(2)

    Payout.objects.filter(pk=payouts[0].pk).update(amount=Decimal("10.00"))
    retry = reverse("admin:litejobs_bulkaction_retry", args=[record.pk, failed.pk])
    assert client.post(retry).status_code == 302
    run_worker()
    failed.refresh_from_db()
    assert failed.state == "succeeded"
    assert Payout.objects.filter(state="paid").count() == 2

    ops = UserFactory(
        username="ops", permissions=["litejobs.view_bulkaction"]
    )  # may read the record, not act
    client.force_login(ops)
    assert (
        client.get(reverse("admin:litejobs_bulkaction_change", args=[record.pk])).status_code == 200
    )
    assert client.post(retry).status_code == 403


@pytest.mark.django_db(transaction=True)
def test_a_payee_changed_before_its_job_ran_shows_refused_with_the_confirmed_payee(
    client, clock, run_worker
):
    finance = FinanceFactory()
    payouts = [PayoutFactory(amount="10.00", payee="Casa Verde"), PayoutFactory(amount="20.00")]
    client = signed_in(client, finance)
    token = token_of(preview_page(client, payouts))
    client.post(CONFIRM, {"token": token, "code": fresh_code(TOTPDevice.objects.get(user=finance))})
    Payout.objects.filter(pk=payouts[0].pk).update(payee="Mallory Ltd")
    run_worker()

    record = BulkAction.objects.get()
    page = client.get(reverse("admin:litejobs_bulkaction_change", args=[record.pk])).content
    page = page.decode()
    assert "paid to (as confirmed)" in page and "payee: Casa Verde" in page
    assert "Mallory" not in page
    assert 'data-code="bulk-binding-changed"' in page
    assert "payee changed since it was confirmed" in page and "[bulk-binding-changed]" not in page
    assert Payout.objects.get(pk=payouts[0].pk).state == "pending"


@pytest.mark.django_db(transaction=True)
def test_the_jobs_admin_retry_refuses_a_bulk_item_job(admin_client, clock, run_worker):
    finance = FinanceFactory()
    payouts = [PayoutFactory(amount="10.00")]
    client = signed_in(admin_client, finance)
    token = token_of(preview_page(client, payouts))
    client.post(CONFIRM, {"token": token, "code": fresh_code(TOTPDevice.objects.get(user=finance))})
    Payout.objects.filter(pk=payouts[0].pk).update(amount=Decimal("11.00"))
    run_worker()
    item = BulkAction.objects.get().items.get()
    Payout.objects.filter(pk=payouts[0].pk).update(amount=Decimal("10.00"))

    operator = UserFactory(username="ops", permissions=["litejobs.view_job", "litejobs.change_job"])
    client.force_login(operator)
    response = client.post(
        reverse("admin:litejobs_job_changelist"),
        {"action": "retry_jobs", "_selected_action": [str(item.job_id)]},
        follow=True,
    )
    shown = [(m.extra_tags, str(m)) for m in response.context["messages"]]
    assert any(tags == "bulk-retry-required" for tags, _ in shown), shown
    run_worker()
    assert Job.objects.get(pk=item.job_id).state == "dead"
    assert Payout.objects.get(pk=payouts[0].pk).state == "pending"


@pytest.mark.django_db
def test_the_code_typed_never_reaches_an_error_report(client, finance, clock, monkeypatch):
    from django.core.signals import got_request_exception
    from django.views.debug import ExceptionReporter

    from litejobs import bulk

    def broken(*args, **kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(bulk, "confirm", broken)
    reports = []

    def capture(sender, request, **kwargs):
        reports.append(ExceptionReporter(request, RuntimeError, RuntimeError("x"), None))

    got_request_exception.connect(capture)
    client = signed_in(client, finance)
    client.raise_request_exception = False
    try:
        response = client.post(CONFIRM, {"token": "t", "code": "493817"})
    finally:
        got_request_exception.disconnect(capture)
    assert response.status_code == 500
    [report] = reports
    assert "493817" not in report.get_traceback_text()
    assert "493817" not in report.get_traceback_html()
    assert report.filter.get_post_parameters(report.request)["code"] == "********************"


@pytest.mark.django_db
def test_records_are_read_only_and_visible_to_finance_and_auditors_only(client, finance, clock):
    for url in (
        reverse("admin:litejobs_bulkaction_add"),
        reverse("admin:litejobs_bulkconfirmationattempt_add"),
    ):
        assert signed_in(client, finance).get(url).status_code == 403
    assert client.get(reverse("admin:litejobs_bulkaction_changelist")).status_code == 200
    assert (
        client.get(reverse("admin:litejobs_bulkconfirmationattempt_changelist")).status_code == 200
    )
    stranger = UserFactory(username="sam", permissions=["testapp.view_payout"])
    client.force_login(stranger)
    assert client.get(reverse("admin:litejobs_bulkaction_changelist")).status_code == 403


def plain(html: str) -> str:
    """The page's text as a person reads it: tags dropped, whitespace folded."""
    return html_text.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)))


@pytest.mark.django_db
def test_the_preview_has_a_totals_row_per_currency_and_a_button_naming_the_money(
    client, finance, clock
):
    payouts = [
        PayoutFactory(amount="1900.00"),
        PayoutFactory(amount="800.5"),
        PayoutFactory(amount="75.25", currency="USD"),
    ]
    page = preview_page(signed_in(client, finance), payouts).content.decode()

    footer = page.split("<tfoot>")[1].split("</tfoot>")[0]
    rows = re.findall(r'<tr class="bulk-totals-row" data-currency="(\w+)">(.*?)</tr>', footer)
    assert [(currency, plain(row).strip()) for currency, row in rows] == [
        ("EUR", "Total EUR: 2 items EUR 2,700.50"),
        ("USD", "Total USD: 1 item USD 75.25"),
    ]
    assert 'value="Confirm release payouts: 3 items, EUR 2,700.50 and USD 75.25"' in page
    # Amounts line up: one right-aligned, tabular column, with the same two decimals.
    cells = re.findall(r'<td class="bulk-amount">([^<]*)</td>', page.split("<tfoot>")[0])
    assert cells[-3:] == ["EUR 1,900.00", "EUR 800.50", "USD 75.25"]
    assert "bulk.css" in page
    # The word "digest" is not shown to finance staff: a fingerprint, behind a details element.
    assert "digest" not in plain(page).lower()
    assert '<details id="bulk-fingerprint">' in page


@pytest.mark.django_db
def test_one_wrong_code_reads_wrong_code_with_the_wait_not_too_many(
    client, finance, clock, settings
):
    settings.OTP_TOTP_THROTTLE_FACTOR = 30  # one wrong code: a 30 s wait (django-otp's rule)
    client = signed_in(client, finance)
    token = token_of(preview_page(client, [PayoutFactory()]))
    device = TOTPDevice.objects.get(user=finance)
    posted = client.post(CONFIRM, {"token": token, "code": wrong_code(device)})
    page = plain(client.get(posted["Location"]).content.decode())
    assert "Wrong code: it is not the one your device 'finance phone' shows" in page
    assert "the next one is taken only in 30 seconds" in page  # the wait, when there is one
    assert "too many" not in page.lower()


@pytest.mark.django_db
def test_a_right_code_just_after_a_wrong_one_says_how_long_to_wait_and_works_after(
    client, finance, clock, settings
):
    settings.OTP_TOTP_THROTTLE_FACTOR = 30  # one wrong code: a 30 s wait (django-otp's rule)
    client = signed_in(client, finance)
    token = token_of(preview_page(client, [PayoutFactory()]))
    device = TOTPDevice.objects.get(user=finance)
    client.post(CONFIRM, {"token": token, "code": wrong_code(device)})

    posted = client.post(CONFIRM, {"token": token, "code": fresh_code(device)})
    page = plain(client.get(posted["Location"]).content.decode())
    assert (
        "After a wrong code, your device 'finance phone' takes the next one only in 30 seconds"
        in page
    )
    assert "too many" not in page.lower()
    assert not BulkAction.objects.exists()

    TOTPDevice.objects.filter(pk=device.pk).update(
        throttling_failure_timestamp=F("throttling_failure_timestamp") - timedelta(seconds=20)
    )
    reloaded = plain(client.get(posted["Location"]).content.decode())
    assert "taken only in 10 seconds" in reloaded  # the time left, read again from the device

    TOTPDevice.objects.filter(pk=device.pk).update(
        throttling_failure_timestamp=F("throttling_failure_timestamp") - timedelta(seconds=11)
    )  # the wait is over
    done = client.post(CONFIRM, {"token": token, "code": fresh_code(device)})
    record = BulkAction.objects.get()
    assert done["Location"] == reverse("admin:litejobs_bulkaction_change", args=[record.pk])


@pytest.mark.django_db
def test_confirming_answers_a_redirect_and_reloading_the_result_runs_nothing_again(
    client, finance, clock
):
    client = signed_in(client, finance)
    token = token_of(preview_page(client, [PayoutFactory(), PayoutFactory()]))
    posted = client.post(
        CONFIRM, {"token": token, "code": fresh_code(TOTPDevice.objects.get(user=finance))}
    )
    record = BulkAction.objects.get()
    assert posted.status_code in (302, 303)
    assert posted["Location"] == reverse("admin:litejobs_bulkaction_change", args=[record.pk])

    first = client.get(posted["Location"])
    assert first.status_code == 200 and f'data-id="{record.pk}"' in first.content.decode()
    jobs = Job.objects.count()
    attempts = BulkConfirmationAttempt.objects.count()
    second = client.get(posted["Location"])  # a reload is a GET: it confirms nothing again
    assert second.status_code == 200 and 'id="bulk-outcome"' in second.content.decode()
    assert BulkAction.objects.count() == 1 and Job.objects.count() == jobs == 2
    assert BulkConfirmationAttempt.objects.count() == attempts == 1


@pytest.mark.django_db
def test_the_attempts_audit_page_names_the_device_not_its_internal_id(client, finance, clock):
    client = signed_in(client, finance)
    token = token_of(preview_page(client, [PayoutFactory()]))
    client.post(CONFIRM, {"token": token, "code": wrong_code(TOTPDevice.objects.get(user=finance))})
    attempt = BulkConfirmationAttempt.objects.get()
    admin = signed_in(client, UserFactory(username="root", is_superuser=True, is_staff=True))
    page = admin.get(
        reverse("admin:litejobs_bulkconfirmationattempt_change", args=[attempt.pk])
    ).content.decode()
    assert "finance phone" in page
    assert "otp_totp.totpdevice/" not in page
    listing = admin.get(reverse("admin:litejobs_bulkconfirmationattempt_changelist"))
    assert '<span title="bulk-code-invalid">refused: wrong code</span>' in listing.content.decode()
