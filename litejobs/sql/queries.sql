-- litejobs' hand-written SQL. Loaded by litejobs/sql/__init__.py; each query below is used by
-- exactly one function (tests/test_sql.py checks that every name is referenced).

-- name: enqueue
-- One job; a live job with the same (name, tenant, key) makes this a no-op (deduplicated).
INSERT INTO litejobs_job (
    name, queue, key, tenant, payload, state, priority, run_at, max_attempts,
    concurrency_key, concurrency_limit, created_at, traceparent, occurrence_id, version
) VALUES (
    %(name)s, %(queue)s, %(key)s, %(tenant)s, %(payload)s::jsonb, %(state)s, %(priority)s,
    %(run_at)s, %(max_attempts)s, %(concurrency_key)s, %(concurrency_limit)s, %(now)s,
    %(traceparent)s, %(occurrence_id)s, %(version)s
)
ON CONFLICT (name, tenant, key) WHERE state IN ({live}) DO NOTHING
RETURNING id

-- name: enqueue_many
-- Up to 1,000 jobs of one declaration in one statement. The columns arrive as JSON arrays
-- (the payloads already JSON text): one document to parse each, no array escaping.
INSERT INTO litejobs_job (
    name, queue, key, tenant, payload, state, priority, run_at, max_attempts,
    concurrency_key, concurrency_limit, created_at, traceparent, version
)
SELECT %(name)s, %(queue)s, rows.key, rows.tenant, rows.payload, %(state)s, %(priority)s,
       %(run_at)s, %(max_attempts)s, rows.concurrency_key, %(concurrency_limit)s, %(now)s,
       %(traceparent)s, %(version)s
FROM ROWS FROM (
    jsonb_array_elements_text(%(keys)s::jsonb),
    jsonb_array_elements_text(%(tenants)s::jsonb),
    jsonb_array_elements(%(payloads)s::jsonb),
    jsonb_array_elements_text(%(concurrency_keys)s::jsonb)
) AS rows (key, tenant, payload, concurrency_key)
ON CONFLICT (name, tenant, key) WHERE state IN ({live}) DO NOTHING
RETURNING id, key, tenant

-- name: live_by_keys
-- The live jobs holding some keys of one declaration (answers a deduplicated enqueue).
SELECT job.id, job.key, job.tenant
FROM litejobs_job AS job
JOIN unnest(%(keys)s::text[], %(tenants)s::text[]) AS wanted (key, tenant)
  ON job.key = wanted.key AND job.tenant = wanted.tenant
WHERE job.name = %(name)s AND job.state IN ({live})

-- name: claim
-- Take up to `limit` due jobs without a concurrency limit: one statement, one new fence each.
-- Due-ness uses the worker's `now`; the lease expiry the database's clock ({db_now}).
-- A last row of NULLs says that concurrency-limited jobs are due too (so an idle poll stays
-- one statement and the limited claim runs only when it has work).
WITH picked AS (
    SELECT id FROM litejobs_job
    WHERE state NOT IN ({unclaimable})  -- matches litejobs_job_claimable; see UNCLAIMABLE
      AND concurrency_key IS NULL
      AND run_at <= %(now)s
      AND (%(queues)s::text[] IS NULL OR queue = ANY(%(queues)s::text[]))
      AND queue NOT IN (SELECT name FROM litejobs_queuestate WHERE paused)
    ORDER BY priority DESC, run_at, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE litejobs_job AS job
    SET state = 'running', attempts = job.attempts + 1, fence = nextval('litejobs_fence'),
        lease_owner = %(owner)s, lease_expires_at = {db_now} + %(lease)s::interval,
        started_at = %(now)s, cancel_requested = false
    FROM picked
    WHERE job.id = picked.id
    RETURNING job.id, job.name, job.queue, job.key, job.tenant, job.payload, job.attempts,
              job.max_attempts, job.fence, job.traceparent, job.occurrence_id, job.version
)
SELECT * FROM claimed
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
WHERE EXISTS (
    SELECT 1 FROM litejobs_job
    WHERE state IN ({claimable})
      AND concurrency_key IS NOT NULL
      AND run_at <= %(now)s
      AND (%(queues)s::text[] IS NULL OR queue = ANY(%(queues)s::text[]))
)

-- name: lock_limited_claims
-- Serialises claims of concurrency-limited jobs fleet-wide until the transaction ends.
SELECT pg_advisory_xact_lock(%(lock_id)s)

-- name: claim_limited
-- Take due concurrency-limited jobs, never more per key than its limit minus those running.
-- Runs after lock_limited_claims in the same transaction, so its snapshot sees every claim
-- committed by the previous holder of the lock.
WITH running AS (
    SELECT concurrency_key, count(*) AS n FROM litejobs_job
    WHERE state = 'running' AND concurrency_key IS NOT NULL
    GROUP BY concurrency_key
), candidates AS (
    SELECT id, concurrency_key, concurrency_limit, priority, run_at,
           row_number() OVER (
               PARTITION BY concurrency_key ORDER BY priority DESC, run_at, id
           ) AS position
    FROM litejobs_job
    WHERE state IN ({claimable})
      AND concurrency_key IS NOT NULL
      AND run_at <= %(now)s
      AND (%(queues)s::text[] IS NULL OR queue = ANY(%(queues)s::text[]))
      AND queue NOT IN (SELECT name FROM litejobs_queuestate WHERE paused)
), picked AS (
    SELECT candidates.id FROM candidates
    LEFT JOIN running ON running.concurrency_key = candidates.concurrency_key
    WHERE candidates.position <= candidates.concurrency_limit - COALESCE(running.n, 0)
    ORDER BY candidates.priority DESC, candidates.run_at, candidates.id
    LIMIT %(limit)s
)
UPDATE litejobs_job AS job
SET state = 'running', attempts = job.attempts + 1, fence = nextval('litejobs_fence'),
    lease_owner = %(owner)s, lease_expires_at = {db_now} + %(lease)s::interval,
    started_at = %(now)s, cancel_requested = false
FROM picked
WHERE job.id = picked.id AND job.state IN ({claimable})
RETURNING job.id, job.name, job.queue, job.key, job.tenant, job.payload, job.attempts,
          job.max_attempts, job.fence, job.traceparent, job.occurrence_id, job.version

-- name: next_due
-- The earliest run_at after `now` among claimable jobs of some queues (an idle worker sleeps
-- until then; what is due already, a claim takes).
SELECT min(run_at) FROM litejobs_job
WHERE state IN ({claimable}) AND run_at > %(now)s
  AND (%(queues)s::text[] IS NULL OR queue = ANY(%(queues)s::text[]))

-- name: complete
-- The fenced completion of one job; run inside the body's transaction (atomic jobs).
UPDATE litejobs_job
SET state = 'done', finished_at = %(now)s, result = %(result)s::jsonb, lease_expires_at = NULL
WHERE id = %(id)s AND fence = %(fence)s AND state = 'running'

-- name: complete_batch
-- The batched, fenced acknowledgement of atomic=False jobs; answers the ids it completed.
UPDATE litejobs_job AS job
SET state = 'done', finished_at = acks.finished_at, result = acks.result, lease_expires_at = NULL
FROM unnest(%(ids)s::bigint[], %(fences)s::bigint[], %(finished)s::timestamptz[],
            %(results)s::jsonb[]) AS acks (id, fence, finished_at, result)
WHERE job.id = acks.id AND job.fence = acks.fence AND job.state = 'running'
RETURNING job.id

-- name: fail
-- The fenced end of a failed attempt: back to `failed` (retry at run_at), or `dead`, or
-- `cancelled`, with the attempt kept in the history.
WITH failed AS (
    UPDATE litejobs_job
    SET state = %(state)s, run_at = COALESCE(%(run_at)s, run_at), finished_at = %(finished_at)s,
        lease_expires_at = NULL, handed_back_at = NULL, error_class = %(error_class)s,
        error_message = %(error_message)s, error_traceback = %(error_traceback)s
    WHERE id = %(id)s AND fence = %(fence)s AND state = 'running'
    RETURNING id, attempts, started_at
)
INSERT INTO litejobs_jobattempt (
    job_id, number, worker, started_at, finished_at, outcome,
    error_class, error_message, error_traceback
)
SELECT id, attempts, %(owner)s, started_at, %(now)s, %(outcome)s,
       %(error_class)s, %(error_message)s, %(error_traceback)s
FROM failed
RETURNING job_id

-- name: discard
-- A spent job of a dead_letter=False declaration: removed instead of kept as dead.
DELETE FROM litejobs_job WHERE id = %(id)s AND fence = %(fence)s AND state = 'running'
RETURNING id

-- name: hand_back
-- A job this worker's code cannot run (its name unknown here, or its payload version newer)
-- goes back uncounted for a worker that can, due again after a backoff that doubles from 1 s
-- to 1 min (measured from the first hand-back, so no hot loop of re-claims), and due at the
-- latest when the grace ends. Nothing comes back once the grace since the first hand-back is
-- spent (or the fence is stale): the caller then dead-letters it.
UPDATE litejobs_job
SET state = 'scheduled', attempts = attempts - 1, lease_expires_at = NULL,
    handed_back_at = COALESCE(handed_back_at, %(now)s::timestamptz),
    run_at = LEAST(
        %(now)s::timestamptz + LEAST(
            GREATEST(%(now)s::timestamptz - COALESCE(handed_back_at, %(now)s::timestamptz),
                     interval '1 second'),
            interval '1 minute'),
        COALESCE(handed_back_at, %(now)s::timestamptz) + %(grace)s::interval),
    error_class = %(error_class)s, error_message = %(error_message)s
WHERE id = %(id)s AND fence = %(fence)s AND state = 'running'
  AND (handed_back_at IS NULL OR handed_back_at > %(now)s::timestamptz - %(grace)s::interval)
RETURNING id

-- name: release
-- Hand claimed jobs back uncounted (drain, database outage, claimed but never started).
UPDATE litejobs_job AS job
SET state = 'ready', attempts = job.attempts - 1, lease_expires_at = NULL
FROM unnest(%(ids)s::bigint[], %(fences)s::bigint[]) AS held (id, fence)
WHERE job.id = held.id AND job.fence = held.fence AND job.state = 'running'
RETURNING job.id

-- name: progress
-- The latest progress of running jobs (throttled by the worker to one write a second).
UPDATE litejobs_job AS job
SET progress = updates.progress
FROM unnest(%(ids)s::bigint[], %(fences)s::bigint[], %(progress)s::jsonb[])
     AS updates (id, fence, progress)
WHERE job.id = updates.id AND job.fence = updates.fence AND job.state = 'running'

-- name: heartbeat
-- One statement per heartbeat: the Worker row, the leases of every job this worker holds
-- (answering which are still ours and whether an operator asked to cancel them), the jobs
-- of workers that stopped renewing (back to `failed` for a retry, `dead` when spent, or
-- `cancelled` when an operator had asked to cancel them), and
-- Worker rows long gone. Every expiry is written and compared on {db_now}: hosts whose clocks
-- disagree never reap each other's healthy jobs.
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
), renewed AS (
    UPDATE litejobs_job AS job
    SET lease_expires_at = {db_now} + %(lease)s::interval
    FROM unnest(%(ids)s::bigint[], %(fences)s::bigint[]) AS held (id, fence)
    WHERE job.id = held.id AND job.fence = held.fence AND job.state = 'running'
    RETURNING job.id, job.cancel_requested
), expired AS (
    SELECT id FROM litejobs_job
    WHERE state = 'running' AND lease_expires_at < {db_now} AND lease_owner <> %(owner)s
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
    RETURNING job.id, job.attempts, job.lease_owner, job.started_at, job.error_message
), history AS (
    INSERT INTO litejobs_jobattempt (
        job_id, number, worker, started_at, finished_at, outcome,
        error_class, error_message, error_traceback
    )
    SELECT id, attempts, lease_owner, started_at, %(now)s, 'lease_expired',
           'litejobs.LeaseExpired', error_message, ''
    FROM reaped
), forgotten AS (
    DELETE FROM litejobs_worker
    WHERE lease_expires_at < {db_now} - %(forget_after)s::interval AND id <> %(owner)s
)
SELECT id, cancel_requested, false AS reaped FROM renewed
UNION ALL
SELECT id, false, true FROM reaped

-- name: worker_stopped
-- A worker that exits cleanly removes its row.
DELETE FROM litejobs_worker WHERE id = %(owner)s

-- name: cancel
-- An operator's cancel of one live job, in one statement: cancelled at once, or, while a
-- worker holds it under a current lease, cancel_requested for that worker's heartbeat. A
-- running job whose lease lapsed (its worker is gone) is cancelled at once and its lost
-- attempt recorded, so the reaper cannot hand it back to a worker.
WITH target AS (
    SELECT id, state AS was, attempts, lease_owner, started_at,
           (state = 'running' AND lease_expires_at >= {db_now}) AS held
    FROM litejobs_job
    WHERE id = %(id)s AND state IN ({live})
    FOR UPDATE
), changed AS (
    UPDATE litejobs_job AS job
    SET state = CASE WHEN target.held THEN 'running' ELSE 'cancelled' END,
        cancel_requested = target.held,
        finished_at = CASE WHEN target.held THEN job.finished_at ELSE %(now)s::timestamptz END,
        lease_expires_at = CASE WHEN target.held THEN job.lease_expires_at END
    FROM target
    WHERE job.id = target.id
    RETURNING job.id, job.state, target.was, job.lease_owner
), lost AS (
    INSERT INTO litejobs_jobattempt (
        job_id, number, worker, started_at, finished_at, outcome,
        error_class, error_message, error_traceback
    )
    SELECT id, attempts, lease_owner, started_at, %(now)s, 'lease_expired',
           'litejobs.LeaseExpired',
           'Worker ' || lease_owner || ' stopped renewing its lease; an operator cancelled the job.',
           ''
    FROM target
    WHERE was = 'running' AND NOT held
)
SELECT id, state, was, lease_owner FROM changed

-- name: purge
-- One bounded batch of finished rows in one state, older than its retention, with their
-- attempt history. Rows an operator is retrying right now are skipped, never deleted.
WITH doomed AS (
    SELECT id FROM litejobs_job
    WHERE state = %(state)s AND finished_at < %(before)s
    ORDER BY finished_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), attempts AS (
    DELETE FROM litejobs_jobattempt WHERE job_id IN (SELECT id FROM doomed)
)
DELETE FROM litejobs_job WHERE id IN (SELECT id FROM doomed)


-- name: lead
-- Take a role's leader lease when it is free or lapsed, or renew it when it is ours; answers
-- its fence (a new one whenever the leader changes), nothing when another process leads. Run
-- first in a transaction, the row lock holds a takeover off until that transaction ends. The
-- expiry is the database's clock ({db_now}), so replicas whose clocks disagree agree on it.
INSERT INTO litejobs_leaderlease AS lease (
    name, owner, host, pid, fence, acquired_at, renewed_at, expires_at
) VALUES (
    %(role)s, %(owner)s, %(host)s, %(pid)s, nextval('litejobs_fence'), {db_now}, {db_now},
    {db_now} + %(lease)s::interval
)
ON CONFLICT (name) DO UPDATE SET
    owner = EXCLUDED.owner, host = EXCLUDED.host, pid = EXCLUDED.pid,
    fence = CASE WHEN lease.owner = EXCLUDED.owner THEN lease.fence ELSE EXCLUDED.fence END,
    acquired_at = CASE WHEN lease.owner = EXCLUDED.owner THEN lease.acquired_at
                       ELSE EXCLUDED.acquired_at END,
    renewed_at = EXCLUDED.renewed_at, expires_at = EXCLUDED.expires_at
WHERE lease.owner = EXCLUDED.owner OR lease.expires_at < {db_now}
RETURNING fence

-- name: still_leader
-- Inside a transaction: the role's lease is still ours under this fence. FOR SHARE holds off
-- a takeover until the transaction commits, so a deposed leader never writes as leader.
SELECT fence FROM litejobs_leaderlease
WHERE name = %(role)s AND owner = %(owner)s AND fence = %(fence)s AND expires_at >= {db_now}
FOR SHARE

-- name: resign
-- A leader stopping cleanly (or stepping aside) hands its lease on at once.
UPDATE litejobs_leaderlease SET expires_at = {db_now} - interval '1 second'
WHERE name = %(role)s AND owner = %(owner)s

-- name: schedule_advance
-- Move a schedule's planned_through forward; locks the row, so a concurrent disable either
-- waits for this plan (and then cancels what it planned) or makes it plan nothing.
UPDATE litejobs_schedule SET planned_through = %(through)s
WHERE id = %(id)s AND enabled AND status = 'active'
  AND (planned_through IS NULL OR planned_through < %(through)s)
RETURNING id

-- name: occurrence_plan
-- One occurrence to run; its identity (schedule, instant) makes a second plan a no-op.
INSERT INTO litejobs_occurrence (
    schedule_id, scheduled_for, run_at, state, attempts, replays, created_at,
    last_scheduled_at, lease_owner, fence, tenant, error_class, error_message, note
) VALUES (
    %(schedule_id)s, %(scheduled_for)s, %(run_at)s, 'scheduled', 0, 0, %(now)s, %(now)s, '', 0,
    %(tenant)s, '', '', %(note)s
)
ON CONFLICT (schedule_id, scheduled_for) DO NOTHING
RETURNING id

-- name: occurrence_link_job
-- The job that runs an occurrence, recorded on it (the trigger follows only this job).
UPDATE litejobs_occurrence SET last_job_id = %(job_id)s WHERE id = %(id)s

-- name: occurrences_skip
-- Missed instants recorded as skipped occurrences (their identity taken, nothing run).
INSERT INTO litejobs_occurrence (
    schedule_id, scheduled_for, run_at, state, attempts, replays, created_at, finished_at,
    lease_owner, fence, tenant, error_class, error_message, note
)
SELECT %(schedule_id)s, instant, instant, 'skipped', 0, 0, %(now)s, %(now)s, '', 0, '', '', '',
       %(note)s
FROM unnest(%(instants)s::timestamptz[]) AS instant
ON CONFLICT (schedule_id, scheduled_for) DO NOTHING

-- name: schedule_cancel_unstarted
-- Disabling a schedule: the jobs of its occurrences that never started are cancelled (their
-- occurrences become skipped through the trigger); claimed ones finish.
UPDATE litejobs_job AS job
SET state = 'cancelled', finished_at = %(now)s
FROM litejobs_occurrence AS occurrence
WHERE occurrence.schedule_id = %(schedule_id)s AND occurrence.state = 'scheduled'
  AND occurrence.attempts = 0 AND job.id = occurrence.last_job_id
  AND job.state IN ('scheduled', 'ready')
RETURNING job.occurrence_id

-- name: occurrence_purge
-- One bounded batch of a schedule's finished occurrences older than its retention, with
-- their replay audit. Their jobs are purged by the jobs' own retention.
WITH doomed AS (
    SELECT id FROM litejobs_occurrence
    WHERE schedule_id = %(schedule_id)s AND scheduled_for < %(before)s
      AND state IN ({finished_occurrences})
    ORDER BY scheduled_for
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), audit AS (
    DELETE FROM litejobs_occurrencereplay WHERE occurrence_id IN (SELECT id FROM doomed)
)
DELETE FROM litejobs_occurrence WHERE id IN (SELECT id FROM doomed)

-- name: steps_of_job
-- Every stored step of a job (a run loads them once, at its first step).
SELECT name, kind, state, output, executions, wake_at, created_at, sequence
FROM litejobs_jobstep
WHERE job_id = %(job_id)s

-- name: step_write
-- Record one step, only while the writer's claim is current: the job row is share-locked
-- until the step's transaction ends, so no takeover lands between the check and the commit.
-- No row back: the fence is stale and nothing was written.
WITH holder AS (
    SELECT id FROM litejobs_job
    WHERE id = %(job_id)s AND fence = %(fence)s AND state = 'running'
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

-- name: job_suspend
-- A held job sleeps (or waits for an operator) without a worker: `waiting` until run_at, its
-- attempt uncounted (the same attempt number resumes), fenced.
UPDATE litejobs_job
SET state = 'waiting', attempts = attempts - 1, run_at = %(run_at)s, lease_expires_at = NULL,
    error_class = %(error_class)s, error_message = %(error_message)s
WHERE id = %(id)s AND fence = %(fence)s AND state = 'running'

-- name: event_lock
-- Orders publishers and waiters of one event name (held until the transaction ends).
SELECT pg_advisory_xact_lock(%(lock_id)s)

-- name: job_suspend_for_event
-- Like job_suspend, for an event wait: due at once when a matching event was published since
-- the wait began (after event_lock, so no publisher can slip between this check and commit).
UPDATE litejobs_job
SET state = 'waiting', attempts = attempts - 1, lease_expires_at = NULL,
    error_class = '', error_message = '',
    run_at = CASE WHEN EXISTS (
        SELECT 1 FROM litejobs_event
        WHERE name = %(event)s AND published_at >= %(since)s AND payload @> %(match)s::jsonb
    ) THEN %(now)s::timestamptz ELSE %(run_at)s::timestamptz END
WHERE id = %(id)s AND fence = %(fence)s AND state = 'running'

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

-- name: outbox_stage
-- One outbox message, in the caller's transaction. A keyed message first takes a
-- transaction-scoped lock on its key, so messages of one key get their ids in commit order:
-- the relay, publishing in id order, can never see a later message of a key before an
-- earlier one has committed (or rolled back).
WITH serialised AS MATERIALIZED (
    SELECT CASE WHEN %(key)s <> ''
                THEN pg_advisory_xact_lock(hashtextextended('litejobs.outbox:' || %(key)s, 0))
           END AS locked
)
INSERT INTO litejobs_outboxmessage (topic, key, tenant, payload, created_at)
SELECT %(topic)s, %(key)s, %(tenant)s, %(payload)s::jsonb, %(now)s
FROM serialised
RETURNING id

-- name: outbox_publish
-- Claim the next committed pending messages in id order and mark them published under the
-- lease's fence; the jobs for them are inserted in the same transaction, so a crash before
-- COMMIT leaves them all pending (and creates nothing).
UPDATE litejobs_outboxmessage AS message
SET published_at = %(now)s, relay_fence = %(fence)s
FROM (
    SELECT id FROM litejobs_outboxmessage
    WHERE published_at IS NULL
    ORDER BY id
    LIMIT %(limit)s
    FOR UPDATE
) AS picked
WHERE message.id = picked.id
RETURNING message.id, message.topic, message.key, message.tenant, message.payload::text,
          message.created_at

-- name: webhook_deliveries_create
-- One delivery record per (endpoint, message) the relay publishes; answers their ids.
INSERT INTO litejobs_webhookdelivery AS delivery (
    endpoint_id, message_id, topic, state, attempts, last_error, created_at
)
SELECT rows.endpoint_id, rows.message_id, rows.topic, 'pending', 0, '', %(now)s
FROM unnest(%(endpoints)s::bigint[], %(messages)s::bigint[], %(topics)s::text[])
     AS rows (endpoint_id, message_id, topic)
ON CONFLICT (endpoint_id, message_id) DO NOTHING
RETURNING delivery.id, delivery.endpoint_id, delivery.message_id

-- name: outbox_purge
-- One bounded batch of published messages older than the retention.
DELETE FROM litejobs_outboxmessage
WHERE id IN (
    SELECT id FROM litejobs_outboxmessage
    WHERE published_at < %(before)s
    ORDER BY published_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)

-- name: webhook_delivery_purge
-- One bounded batch of finished webhook deliveries older than the retention.
DELETE FROM litejobs_webhookdelivery
WHERE id IN (
    SELECT id FROM litejobs_webhookdelivery
    WHERE finished_at < %(before)s
    ORDER BY finished_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)

-- name: webhook_endpoints_enabled
-- The endpoints the relay delivers a batch to (read once per batch, in its transaction).
SELECT id, tenant, topics FROM litejobs_webhookendpoint WHERE enabled
