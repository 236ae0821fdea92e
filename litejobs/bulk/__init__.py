"""Bulk money actions: a preview of every item, then a TOTP code from the finance phone.

An app declares the action in its ``queues.py``, beside the queue it acts on::

    from litejobs.bulk import bulk_money_action

    release = bulk_money_action(
        "payouts.release", queue="payouts", permission="payouts.release_payout",
        amount=lambda payout: (payout.amount, payout.currency),   # -> (Decimal, "EUR")
        bind=("payee", "account"),                                # who gets paid, where
        execute=pay_out,                                          # (payout, run) -> note
        description="Pays each payout to its payee and marks it paid.")

It is never a direct action. ``preview`` reads the ticked items and lists every one with its
amount, what it binds (the payee, the account: whatever decides where the money goes), the
count and the total per currency, and a **digest** (sha256 over the item ids, amounts,
currencies and bound values); it executes nothing. ``confirm`` then takes a TOTP code from the
acting user's django-otp device (the finance phone) and is **bound to that digest**: the set
is read again, and if anything changed (an item left the queue, was claimed, changed amount or
payee) the confirmation is refused with a fresh preview. The code is verified by django-otp's
``TOTPDevice.verify_token`` under a row lock on the device, so it is single-use (``last_t``)
and wrong codes are throttled (``throttling_failure_count``, doubling waits); every attempt,
right or wrong, is audited as a ``BulkConfirmationAttempt``.

A verified confirmation writes the ``BulkAction`` record and enqueues **one job per item**
(``enqueue_many``, keyed ``bulk:<action>:<item>:<confirmation>``) in one transaction. Each job
runs its item in its own atomic block: lock the item's record (only a pending or retrying item
executes), lock the row and check it still reads the confirmed amount and bound values,
resolve its work item, call ``execute``, record the outcome — all or nothing, so a replay, a
double submit or a worker killed mid-batch moves no money twice, and a payee changed after the
code was typed is never paid. A failed item keeps its error and can be retried alone
(``retry_item``, which needs the action's permission; the generic job retry refuses these jobs).

``declarations`` (``bulk_money_action``), ``devices`` (who may run it, the TOTP devices:
django-otp, ``litejobs[otp]``), ``preview`` (every item, the totals, the digest),
``confirmation`` (the code, bound to the digest, audited), ``execution`` (one job per item,
each run once; retrying a failed item), ``errors`` (its refusals), ``admin`` and ``checks``.
This package's face is the API of ``litejobs.bulk``.
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
from .errors import BulkActionNotFound, BulkRefused, BulkSetChanged
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
    "BulkActionNotFound",
    "BulkMoneyAction",
    "BulkRefused",
    "BulkRun",
    "BulkSetChanged",
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
