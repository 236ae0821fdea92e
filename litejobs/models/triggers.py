"""The shapes litejobs' database triggers take, each written once.

A record's rule that the database keeps whoever writes (a fence that never decreases, a row
that never changes) is a refusal: a ``BEFORE`` trigger raising a check violation, which the
callers map to their coded errors. A wake-up is a ``NOTIFY`` sent once per statement over its
transition table, at commit. A record that follows another's change (an occurrence following
its job) is an ``AFTER UPDATE`` trigger of one row. The migrations hold the compiled SQL, so
the triggers these build are the ones written out by hand before.
"""

import pgtrigger


def refusal(message: str, *values: str) -> str:
    """The body of a trigger refusing the change with ``message`` as a check violation, each
    ``%`` of it filled by one of ``values`` (SQL expressions such as ``OLD.id``)."""
    filled = "".join(f", {value}" for value in values)
    return f"RAISE EXCEPTION '{message}'{filled} USING ERRCODE = 'check_violation'; RETURN NULL;"


def refuse(
    name: str,
    operation: pgtrigger.Operation,
    message: str,
    *values: str,
    condition: str | None = None,
) -> pgtrigger.Trigger:
    """A trigger refusing ``operation`` (when ``condition`` holds, if given) with ``message``."""
    return pgtrigger.Trigger(
        name=name,
        when=pgtrigger.Before,
        operation=operation,
        condition=pgtrigger.Condition(condition) if condition else None,
        func=refusal(message, *values),
    )


def fence_never_decreases(name: str, noun: str) -> pgtrigger.Trigger:
    """A claim's fence only grows: a stale writer's update of the ``noun`` is refused."""
    return refuse(
        name,
        pgtrigger.Update,
        f"litejobs: the fence of {noun} % cannot decrease (% -> %)",
        "OLD.id",
        "OLD.fence",
        "NEW.fence",
        condition="NEW.fence < OLD.fence",
    )


def notify_per_statement(
    name: str, operation: pgtrigger.Operation, func: str, **referencing: str
) -> pgtrigger.Trigger:
    """A trigger running ``func`` once after each ``operation`` statement, over its transition
    tables (``referencing``: ``new="inserted"``, ``old=...``)."""
    return pgtrigger.Trigger(
        name=name,
        level=pgtrigger.Statement,
        when=pgtrigger.After,
        operation=operation,
        referencing=pgtrigger.Referencing(**referencing),
        func=func,
    )


def after_update(name: str, condition: str, func: str) -> pgtrigger.Trigger:
    """A trigger running ``func`` after the update of each row for which ``condition`` holds."""
    return pgtrigger.Trigger(
        name=name,
        when=pgtrigger.After,
        operation=pgtrigger.Update,
        condition=pgtrigger.Condition(condition),
        func=func,
    )
