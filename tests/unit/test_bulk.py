"""Bulk money actions, the pure parts: the digest a confirmation binds, and declarations refused
with the fix."""

from __future__ import annotations

from decimal import Decimal

import pytest

from litejobs import bulk
from litejobs.exceptions import DeclarationError

ACTION = "payouts.release"


def test_the_digest_covers_ids_amounts_currencies_and_bound_values_in_any_order():
    paid_to = (("account", "DE01"), ("payee", "Acme"))
    line = bulk.PreviewLine(1, "10", "x", Decimal("12.50"), "EUR", paid_to)
    other = bulk.PreviewLine(2, "11", "y", Decimal("3"), "USD")
    digest = bulk.digest_of(ACTION, [line, other])
    assert bulk.digest_of(ACTION, [other, line]) == digest
    same_money = bulk.PreviewLine(1, "10", "x", Decimal("12.500000"), "EUR", paid_to)
    assert bulk.digest_of(ACTION, [same_money, other]) == digest
    for changed in (
        bulk.PreviewLine(1, "10", "x", Decimal("12.51"), "EUR", paid_to),
        bulk.PreviewLine(1, "10", "x", Decimal("12.50"), "USD", paid_to),
        bulk.PreviewLine(3, "10", "x", Decimal("12.50"), "EUR", paid_to),
        bulk.PreviewLine(1, "10", "x", Decimal("12.50"), "EUR", (("account", "DE01"),)),
        bulk.PreviewLine(1, "10", "x", Decimal("12.50"), "EUR", (("payee", "Mallory"),)),
        bulk.PreviewLine(
            1, "10", "x", Decimal("12.50"), "EUR", (("account", "DE02"), ("payee", "Acme"))
        ),
        bulk.PreviewLine(
            1, "10", "x", Decimal("12.50"), "EUR", (("account", None), ("payee", "Acme"))
        ),
    ):
        assert bulk.digest_of(ACTION, [changed, other]) != digest
    assert bulk.digest_of("other.action", [line, other]) != digest


def test_invalid_declarations_are_refused_with_the_fix():
    def amount(row):
        return row.amount, "EUR"

    def execute(row, run):
        return None

    cases = [
        ({"name": "bad name!"}, "name"),
        ({"queue": 5}, "queue="),
        ({"amount": "x"}, "amount="),
        ({"execute": lambda row: None}, "execute="),
        ({"permission": "release"}, "permission="),
        ({"resolution": "Paid Out"}, "resolution="),
        ({"bind": "payee"}, "bind="),
        ({"bind": ("payee", "payee")}, "bind="),
        ({"bind": ("payee.name",)}, "bind="),
        ({"bind": lambda: {}}, "bind="),
    ]
    for override, fix in cases:
        options = {
            "name": "tests.bad",
            "queue": "payouts",
            "amount": amount,
            "execute": execute,
            "permission": "testapp.release_payout",
            **override,
        }
        with pytest.raises(DeclarationError) as refused:
            bulk.bulk_money_action(options.pop("name"), **options)
        assert refused.value.code == "bulk-action-invalid"
        assert fix in str(refused.value)
    assert "tests.bad" not in {a.name for a in bulk.all_actions()}
