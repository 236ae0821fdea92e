-- Durable steps of job runs, and the events steps wait for.
-- Statements are read by litejobs.sql; values are bound parameters.

-- name: steps_of_job
-- prepared
-- Every stored step of a job (a run loads them once, at its first step).
SELECT name, kind, state, output, executions, wake_at, created_at, sequence
FROM litejobs_jobstep
WHERE job_id = %(job_id)s

-- name: step_write
-- prepared
-- Record one step, only while the writer's claim is current: the job row is share-locked
-- until the step's transaction ends, so no takeover lands between the check and the commit.
-- No row back: the fence is stale and nothing was written.
WITH holder AS (
    SELECT id FROM litejobs_job
    WHERE id = %(job_id)s AND fence = %(fence)s AND state COLLATE "C" = 'running'
    FOR SHARE
)
INSERT INTO litejobs_jobstep AS step (
    job_id, name, kind, state, output, error, executions, once, fence, created_at,
    finished_at, wake_at, event, match, sequence
)
SELECT holder.id, %(name)s, %(kind)s, %(state)s, %(output)s::jsonb, %(error)s, %(executions)s,
       %(once)s, %(fence)s, %(now)s, %(finished_at)s::timestamptz, %(wake_at)s::timestamptz,
       %(event)s, %(match)s::jsonb, %(sequence)s
FROM holder
ON CONFLICT (job_id, name) DO UPDATE SET
    kind = EXCLUDED.kind, state = EXCLUDED.state, output = EXCLUDED.output,
    error = EXCLUDED.error, executions = EXCLUDED.executions, once = EXCLUDED.once,
    fence = EXCLUDED.fence, finished_at = EXCLUDED.finished_at,
    wake_at = COALESCE(EXCLUDED.wake_at, step.wake_at),
    event = CASE WHEN EXCLUDED.event = '' THEN step.event ELSE EXCLUDED.event END,
    match = COALESCE(EXCLUDED.match, step.match),
    sequence = EXCLUDED.sequence
RETURNING step.created_at

-- name: event_lock
-- Orders publishers and waiters of one event name (held until the transaction ends).
SELECT pg_advisory_xact_lock(%(lock_id)s)

-- name: event_publish
-- Store an event and make every job waiting for it (payload contains its match) due now.
WITH published AS (
    INSERT INTO litejobs_event (name, payload, published_at)
    VALUES (%(name)s, %(payload)s::jsonb, %(now)s)
    RETURNING id
)
UPDATE litejobs_job AS job
SET run_at = %(now)s
FROM litejobs_jobstep AS step
WHERE step.job_id = job.id AND step.kind = 'wait' AND step.state = 'waiting'
  AND step.event = %(name)s AND %(payload)s::jsonb @> COALESCE(step.match, '{}'::jsonb)
  AND job.state = 'waiting' AND job.run_at > %(now)s

-- name: event_find
-- The first event matching a wait, published since the wait began.
SELECT payload FROM litejobs_event
WHERE name = %(name)s AND published_at >= %(since)s AND payload @> %(match)s::jsonb
ORDER BY id
LIMIT 1

-- name: step_resolve
-- An operator's verdict on a `once` step whose outcome was unknown: completed (it ran) or
-- failed (it did not; it runs again), and its job is due now.
WITH resolved AS (
    UPDATE litejobs_jobstep
    SET state = CASE WHEN %(ran)s THEN 'completed' ELSE 'failed' END,
        finished_at = %(now)s, error = %(note)s
    WHERE job_id = %(job_id)s AND name = %(name)s AND state = 'unknown'
    RETURNING job_id
)
UPDATE litejobs_job AS job
SET run_at = %(now)s, error_class = '', error_message = ''
FROM resolved
WHERE job.id = resolved.job_id AND job.state = 'waiting'
RETURNING job.id
