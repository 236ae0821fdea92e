"""The demo's payouts: seeded once, and finance releases a batch with a code computed from the
secret ``make demo`` prints — every payout paid once, the audit record showing it; and the
demo's admin shows each user only their own TOTP devices."""

from __future__ import annotations

import io
import re
import time
from base64 import b32decode

import pytest
from django.test import Client
from django.urls import reverse
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

from litejobs import bulk
from litejobs.models import BulkAction, BulkConfirmationAttempt, WorkItem
from project.demo.runner import DemoRunner, _finance_device
from project.demo.seed import seed_demo_data
from project.payouts.models import Payout
from project.payouts.seed import FINANCE_TOTP_KEY, PAYOUT_COUNT, seed_payouts
from tests.factories import TOTPDeviceFactory, UserFactory


def banner(report) -> str:
    out = io.StringIO()
    runner = DemoRunner(port=8123, out=out)
    runner._finance = _finance_device(report.payouts)
    runner.announce_finance()
    return out.getvalue()


def code_from_secret(secret: str) -> str:
    """What an authenticator app shows for the printed secret right now."""
    totp = TOTP(b32decode(secret), step=30, digits=6)
    totp.time = time.time()
    return f"{totp.token():06d}"


@pytest.mark.django_db
def test_seeding_queues_a_few_hundred_payouts_in_two_currencies_and_a_finance_phone(clock):
    report = seed_demo_data()
    assert report.payouts.payouts_created == PAYOUT_COUNT >= 200
    assert report.payouts.finance_created
    assert set(Payout.objects.values_list("currency", flat=True)) == {"EUR", "USD"}
    assert set(Payout.objects.values_list("state", flat=True)) == {"pending"}
    assert WorkItem.objects.filter(queue="payouts", state="open").count() == PAYOUT_COUNT
    device = TOTPDevice.objects.get(user__username="finance")
    assert device.confirmed and device.key == FINANCE_TOTP_KEY

    again = seed_payouts()  # idempotent: nothing new, same device and secret
    assert (again.payouts_created, again.finance_created) == (0, False)
    assert again.device.pk == device.pk and again.secret == report.payouts.secret
    assert Payout.objects.count() == PAYOUT_COUNT


@pytest.mark.django_db
def test_the_banner_prints_the_finance_login_secret_and_uri(clock):
    report = seed_demo_data()
    text = banner(report)
    secret = report.payouts.secret
    assert b32decode(secret) == bytes.fromhex(FINANCE_TOTP_KEY)
    assert "finance/finance" in text
    assert f"Finance TOTP secret: {secret}" in text
    assert f"otpauth://totp/litejobs%20demo%3Afinance?secret={secret}" in text
    assert "QR" not in text  # the admin never shows a device's key (OTP_ADMIN_HIDE_SENSITIVE_DATA)


@pytest.mark.django_db
def test_finance_cannot_read_any_totp_device_and_the_admin_hides_every_key(client, clock):
    report = seed_demo_data()
    device = report.payouts.device
    finance = device.user
    assert not finance.has_perm("otp_totp.view_totpdevice")
    assert not finance.has_perm("otp_totp.change_totpdevice")
    config = reverse("admin:otp_totp_totpdevice_config", kwargs={"pk": device.pk})
    qrcode = reverse("admin:otp_totp_totpdevice_qrcode", kwargs={"pk": device.pk})
    change = reverse("admin:otp_totp_totpdevice_change", args=[device.pk])
    client.force_login(finance)
    for url in (config, qrcode, change):
        assert client.get(url).status_code == 403
    # Not even a superuser's session can show a saved key or QR code in the demo's admin.
    root = UserFactory(username="root", is_superuser=True)
    client.force_login(root)
    assert client.get(config).status_code == 403 and client.get(qrcode).status_code == 403
    page = client.get(change).content.decode()
    assert device.key not in page and report.payouts.secret not in page


@pytest.mark.django_db(transaction=True)
def test_finance_releases_a_demo_batch_with_a_code_from_the_printed_secret(clock, run_worker):
    report = seed_demo_data()
    secret = re.search(r"Finance TOTP secret: (\S+)", banner(report)).group(1)
    client = Client()
    assert client.login(username="finance", password="finance")  # the printed login
    queue = reverse("admin:litejobs_workitem_queue", kwargs={"queue": "payouts"})
    page = client.get(queue + "?per_page=100").content.decode()
    ticked = [int(i) for i in re.findall(r'name="item" value="(\d+)"', page)][:60]
    assert len(ticked) == 60

    preview = client.post(
        reverse("admin:litejobs_bulkaction_preview", kwargs={"action": "payouts.release"}),
        {"item": ticked},
    )
    assert preview.status_code == 200 and preview.context["preview"].count == 60
    confirmed = client.post(
        reverse("admin:litejobs_bulkaction_confirm", kwargs={"action": "payouts.release"}),
        {"token": preview.context["preview"].token, "code": code_from_secret(secret)},
    )
    assert confirmed.status_code == 302, confirmed.content.decode()[:2000]
    run_worker()

    record = BulkAction.objects.get()
    assert (record.username, record.item_count, record.device_name) == (
        "finance",
        60,
        "finance phone",
    )
    assert bulk.summary(record).status == "succeeded"
    paid = Payout.objects.filter(state="paid")
    assert paid.count() == 60
    assert set(paid.values_list("paid_by_bulk_action", flat=True)) == {record.pk}
    released = WorkItem.objects.filter(queue="payouts", state="done", resolution="released")
    assert sorted(released.values_list("pk", flat=True)) == sorted(ticked)
    totals = {}
    for payout in paid:
        totals[payout.currency] = totals.get(payout.currency, 0) + payout.amount
    assert record.totals == {currency: str(total) for currency, total in totals.items()}
    assert BulkConfirmationAttempt.objects.get().result == "confirmed"
    audit = client.get(reverse("admin:litejobs_bulkaction_change", args=[record.pk]))
    assert "60 succeeded" in audit.content.decode()


@pytest.mark.django_db
def test_users_who_may_view_devices_see_only_their_own(client, clock, settings):
    owner = UserFactory(username="fiona", permissions=["otp_totp.view_totpdevice"])
    other = UserFactory(username="frank", permissions=["otp_totp.view_totpdevice"])
    device = TOTPDeviceFactory(user=owner)
    change = reverse("admin:otp_totp_totpdevice_change", args=[device.pk])
    client.force_login(owner)
    assert client.get(change).status_code == 200
    client.force_login(other)
    assert client.get(change).status_code in (302, 403)  # not found for them, or refused
    listing = client.get(reverse("admin:otp_totp_totpdevice_changelist")).content.decode()
    assert "fiona" not in listing
