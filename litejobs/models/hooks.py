"""Settle hooks in the database: the triggers that write a hook's call with the job's ending.

A job whose declaration has ``on_settled=`` is stored with ``settle_hook`` set. When such a job
reaches its final state (done, dead, cancelled — before it ran too) or a running one is removed
(``dropped``: a spent ``dead_letter=False`` job), a trigger inserts one ``litejobs.settled``
job in the same statement, so the hook's call commits with the outcome or not at all. The
triggers' conditions read only the changed row: a job without a hook pays a false ``WHEN``
and no function call. The purge's delete of finished rows is no ending (its rows are not
running), nor is a retry, a suspension or a hand-back (their states are not final).
"""

import pgtrigger

from ..core.enums import TERMINAL, SettleOutcome, sql_list

#: The litejobs job that runs a settle hook (declared in ``litejobs.hooks.jobs``).
SETTLED_JOB = "litejobs.settled"
#: The module declaring it (a worker that does not know the name imports it).
SETTLED_MODULE = "litejobs.hooks.jobs"
#: How many times a hook's call is tried before its job is dead.
HOOK_ATTEMPTS = 3


def _settle(row: str, outcome: str, at: str) -> str:
    """The body inserting the hook job of ``row`` (``NEW`` or ``OLD``) that ended with
    ``outcome`` (an SQL expression) at ``at``. Its key, ``<job id>:<hook job id>``, names this
    ending: each ending has its own, and every run of one hook sees the same."""
    return f"""
    hook_id := nextval(pg_get_serial_sequence('litejobs_job', 'id'));
    INSERT INTO litejobs_job (
        id, name, queue, key, tenant, payload, state, priority, run_at, max_attempts,
        created_at, traceparent, module
    ) VALUES (
        hook_id, '{SETTLED_JOB}', {row}.queue, {row}.id || ':' || hook_id, {row}.tenant,
        jsonb_build_object(
            'job_id', {row}.id, 'name', {row}.name, 'outcome', {outcome},
            'result', CASE WHEN {outcome} = '{SettleOutcome.DONE}' THEN {row}.result END,
            'error_class', CASE WHEN {outcome} = '{SettleOutcome.DONE}' THEN ''
                                ELSE {row}.error_class END,
            'error_message', CASE WHEN {outcome} = '{SettleOutcome.DONE}' THEN ''
                                  ELSE left({row}.error_message, 2000) END
        ),
        'ready', {row}.priority, {at}, {HOOK_ATTEMPTS}, {at}, {row}.traceparent,
        '{SETTLED_MODULE}'
    );
    RETURN NULL;
"""


def settle_triggers() -> list[pgtrigger.Trigger]:
    """The job table's triggers writing a settle hook's call with each ending."""
    return [
        pgtrigger.Trigger(
            name="litejobs_settle_hook",
            when=pgtrigger.After,
            operation=pgtrigger.Update,
            condition=pgtrigger.Condition(
                f"NEW.settle_hook AND NEW.state IN ({sql_list(TERMINAL)}) "
                "AND OLD.state IS DISTINCT FROM NEW.state"
            ),
            declare=[("hook_id", "bigint")],
            func=_settle("NEW", "NEW.state", "COALESCE(NEW.finished_at, statement_timestamp())"),
        ),
        pgtrigger.Trigger(
            name="litejobs_settle_hook_dropped",
            when=pgtrigger.After,
            operation=pgtrigger.Delete,
            condition=pgtrigger.Condition("OLD.settle_hook AND OLD.state = 'running'"),
            declare=[("hook_id", "bigint")],
            func=_settle(
                "OLD",
                f"'{SettleOutcome.DROPPED}'",
                "COALESCE(OLD.finished_at, statement_timestamp())",
            ),
        ),
    ]
