-- Settle hooks and debounce: the debounced enqueue, and the final error of a job dropped with a
-- settle hook. The hook's own call is written by the job table's triggers
-- (litejobs.models.hooks), in the statement that writes the final outcome.

-- name: enqueue_debounced
-- prepared
-- One job of a debounce= declaration, in one statement: a live job with the same (name,
-- tenant, key) that has not started yet (scheduled or ready) is moved to this run_at with these
-- arguments instead; one already running is left as it is and answers nothing (the caller
-- then reads it as deduplicated). `added`: whether the row is new.
{insert_job}
ON CONFLICT (name, tenant, key) WHERE state IN ({live}) DO UPDATE
SET payload = EXCLUDED.payload, run_at = EXCLUDED.run_at, state = EXCLUDED.state,
    priority = EXCLUDED.priority, concurrency_key = EXCLUDED.concurrency_key,
    traceparent = EXCLUDED.traceparent, version = EXCLUDED.version, module = EXCLUDED.module,
    settle_hook = EXCLUDED.settle_hook
WHERE litejobs_job.state IN ('scheduled', 'ready')
RETURNING id, xmax = 0 AS added

-- name: note_drop
-- A spent job of a dead_letter=False declaration with a settle hook, just before `discard`
-- removes it: its final error and when it ended, which the hook is told. Fenced.
UPDATE litejobs_job
SET error_class = %(error_class)s, error_message = %(error_message)s, finished_at = %(now)s
WHERE id = %(id)s AND fence = %(fence)s AND state COLLATE "C" = 'running' AND settle_hook
