"""The demo's checkout saga: charge, reserve, ship — or refund and release, last first."""

from decimal import Decimal

import pytest

from litejobs.models import Job, JobState
from project.orders.models import Checkout
from project.orders.services import start_checkout

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_checkout_ships_through_its_three_steps(clock, run_worker):
    checkout = start_checkout("ada@example.com", "12 Analytical Row", Decimal("42.00"))
    run_worker()
    checkout.refresh_from_db()
    assert checkout.state == Checkout.State.SHIPPED
    job = Job.objects.get(key=f"checkout:{checkout.pk}")
    assert job.state == JobState.DONE
    assert job.result == {
        "charge": checkout.charge_ref,
        "reservation": checkout.reservation_ref,
        "shipment": checkout.shipment_ref,
    }
    assert [s.name for s in job.steps.order_by("sequence")] == ["charge", "reserve", "ship"]


def test_an_undeliverable_checkout_is_refunded_and_released(clock, run_worker):
    checkout = start_checkout("grace@example.com", "1 Nowhere Lane", Decimal("17.50"))
    run_worker()
    checkout.refresh_from_db()
    assert checkout.state == Checkout.State.UNDONE
    assert checkout.charge_ref and checkout.reservation_ref and not checkout.shipment_ref
    assert checkout.refunded_at == checkout.released_at == clock.now()
    job = Job.objects.get(key=f"checkout:{checkout.pk}")
    assert job.state == JobState.DEAD
    compensations = list(
        job.steps.filter(name__startswith="compensate:")
        .order_by("sequence")
        .values_list("name", flat=True)
    )
    assert compensations == ["compensate:reserve", "compensate:charge"]
