"""Bulk money actions: a preview of every item, then a TOTP code from the finance phone.

An app declares the action in its ``queues.py``, beside the queue it acts on::

    from litejobs.bulk import bulk_money_action

    release = bulk_money_action(
        "payouts.release", queue="payouts", permission="payouts.release_payout",
        amount=lambda payout: (payout.amount, payout.currency),   # -> (Decimal, "EUR")
        bind=("payee", "account"),                                # who gets paid, where
        execute=pay_out,                                          # (payout, run) -> note
        description="Pays each payout to its payee and marks it paid.")

``declarations`` (``bulk_money_action``), ``devices`` (who may run it, the TOTP devices:
django-otp, ``litejobs[otp]``), ``preview`` (every item, the totals, the digest),
``confirmation`` (the code, bound to the digest, audited), ``execution`` (one job per item,
each run once; retrying a failed item), ``admin`` and ``checks``. This package's face is the
API of ``litejobs.bulk``.
"""

from .confirmation import Confirmation, confirm
from .declarations import (
    BulkMoneyAction,
    BulkRun,
    actions_for,
    all_actions,
    bulk_money_action,
    get_action,
    unregister,
)
from .devices import devices_for, unavailable_reason
from .execution import ITEM_JOB, Summary, retry_item, run_bulk_item, summary
from .preview import (
    ACTION_LIMIT,
    PREVIEW_LIFETIME,
    Excluded,
    Preview,
    PreviewLine,
    bound_text,
    digest_of,
    money,
    preview,
    reread,
)

__all__ = [
    "ACTION_LIMIT",
    "ITEM_JOB",
    "PREVIEW_LIFETIME",
    "BulkMoneyAction",
    "BulkRun",
    "Confirmation",
    "Excluded",
    "Preview",
    "PreviewLine",
    "Summary",
    "actions_for",
    "all_actions",
    "bound_text",
    "bulk_money_action",
    "confirm",
    "devices_for",
    "digest_of",
    "get_action",
    "money",
    "preview",
    "reread",
    "retry_item",
    "run_bulk_item",
    "summary",
    "unavailable_reason",
    "unregister",
]
