-- The leases of running jobs and the Worker rows that hold them: one statement per heartbeat.
-- Statements are read by litejobs.sql; {db_now} is the lease clock, values bound parameters.

-- name: heartbeat
-- One statement per heartbeat: the Worker row, the leases of every job this worker holds
-- (answering which are still ours and whether an operator asked to cancel them), the jobs
-- of workers that stopped renewing (back to `failed` for a retry, `dead` when spent, or
-- `cancelled` when an operator had asked to cancel them) — this worker's own too, once it no
-- longer holds them (an acknowledgement it could not write) —, and
-- Worker rows long gone. Swept jobs are counted as `lapsed` in the per-minute counters.
-- Every expiry is written and compared on {db_now}: hosts whose clocks
-- disagree never reap each other's healthy jobs. A last row of NULLs says that jobs of this
-- worker's queues are due (the heartbeat doubles as the idle worker's backstop poll).
WITH worker AS (
    INSERT INTO litejobs_worker (
        id, host, pid, queues, concurrency, started_at, last_heartbeat, lease_expires_at,
        in_flight, stopping
    ) VALUES (
        %(owner)s, %(host)s, %(pid)s, %(queues_json)s::jsonb, %(concurrency)s, %(started_at)s,
        {db_now}, {db_now} + %(lease)s::interval, %(in_flight)s::jsonb, %(stopping)s
    )
    ON CONFLICT (id) DO UPDATE SET
        last_heartbeat = EXCLUDED.last_heartbeat, lease_expires_at = EXCLUDED.lease_expires_at,
        in_flight = EXCLUDED.in_flight, stopping = EXCLUDED.stopping
    RETURNING id
), held AS (
    -- Locked in id order, as a batched acknowledgement locks them: never a deadlock between
    -- the two over this worker's jobs.
    SELECT job.id FROM litejobs_job AS job
    JOIN unnest(%(ids)s::bigint[], %(fences)s::bigint[]) AS held (id, fence)
      ON job.id = held.id AND job.fence = held.fence
    WHERE job.state COLLATE "C" = 'running'
    ORDER BY job.id
    FOR UPDATE OF job
), renewed AS (
    UPDATE litejobs_job AS job
    SET lease_expires_at = {db_now} + %(lease)s::interval
    WHERE job.id IN (SELECT id FROM held)
    RETURNING job.id, job.cancel_requested
), expired AS (
    SELECT id, run_at FROM litejobs_job
    WHERE state = 'running' AND lease_expires_at < {db_now}
      AND (lease_owner <> %(owner)s OR NOT id = ANY(%(ids)s::bigint[]))
      AND %(reap)s
    ORDER BY lease_expires_at
    LIMIT 100
    FOR UPDATE SKIP LOCKED
), reaped AS (
    UPDATE litejobs_job AS job
    SET state = CASE WHEN job.cancel_requested THEN 'cancelled'
                     WHEN job.attempts >= job.max_attempts THEN 'dead' ELSE 'failed' END,
        finished_at = CASE WHEN job.cancel_requested OR job.attempts >= job.max_attempts
                           THEN %(now)s::timestamptz END,
        run_at = %(now)s, lease_expires_at = NULL,
        error_class = 'litejobs.LeaseExpired',
        error_message = 'Worker ' || job.lease_owner
            || ' stopped renewing its lease (crashed, killed or cut off from the database).',
        error_traceback = ''
    FROM expired
    WHERE job.id = expired.id
    RETURNING job.id, job.lease_owner, job.started_at, job.error_message, job.queue, job.name,
              expired.run_at AS due_at
), settled AS (
    SELECT queue, name, 'lapsed' AS outcome, due_at, started_at, %(now)s::timestamptz AS at
    FROM reaped
), counted AS (
    {count_settled}
), history AS (
    INSERT INTO litejobs_jobattempt (
        job_id, number, worker, started_at, finished_at, outcome,
        error_class, error_message, error_traceback
    )
    SELECT id, (SELECT count(*) + 1 FROM litejobs_jobattempt WHERE job_id = reaped.id),
           lease_owner, started_at, %(now)s, 'lease_expired',
           'litejobs.LeaseExpired', error_message, ''
    FROM reaped
), forgotten AS (
    DELETE FROM litejobs_worker
    WHERE lease_expires_at < {db_now} - %(forget_after)s::interval AND id <> %(owner)s
)
SELECT id, cancel_requested, false AS reaped FROM renewed
UNION ALL
SELECT id, false, true FROM reaped
UNION ALL
SELECT NULL, NULL, NULL
WHERE EXISTS (
    SELECT 1 FROM litejobs_job
    WHERE state NOT IN ({unclaimable}) AND concurrency_key IS NULL AND run_at <= %(now)s
      AND (%(queues)s::text[] IS NULL OR queue = ANY(%(queues)s::text[]))
      AND queue NOT IN (SELECT name FROM litejobs_queuestate WHERE paused)
) OR litejobs_limited_due(%(now)s, %(queues)s::text[], ARRAY[]::bigint[])

-- name: worker_stopped
-- A worker that exits cleanly removes its row.
DELETE FROM litejobs_worker WHERE id = %(owner)s

-- name: session_end
-- The database session of a runner whose body was abandoned past its timeout: ending it rolls
-- the body's transaction back and frees its locks and its connection. Only a session of this
-- database and role (the worker's own runners).
SELECT pg_terminate_backend(pid) AS ended
FROM pg_stat_activity
WHERE pid = %(pid)s AND pid <> pg_backend_pid()
  AND datname = current_database() AND usename = current_user
