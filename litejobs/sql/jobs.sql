-- Jobs: the one INSERT path, the claim, the fenced transitions of a claimed job, and the
-- operator's cancel and purge. Statements are read by litejobs.sql (its docstring lists the
-- placeholders); each is used by exactly one function (a test checks every name is used).

-- name: enqueue
-- prepared
-- One job; a live job with the same (name, tenant, key) makes this a no-op (deduplicated).
{insert_job}
ON CONFLICT (name, tenant, key) WHERE state IN ({live}) DO NOTHING
RETURNING id

-- name: enqueue_many
-- prepared
-- Up to 1,000 jobs of one declaration in one statement. The columns arrive as JSON arrays
-- (the payloads already JSON text): one document to parse each, no array escaping.
INSERT INTO litejobs_job (
    name, queue, key, tenant, payload, state, priority, run_at, max_attempts,
    concurrency_key, concurrency_limit, created_at, traceparent, version, module, settle_hook,
    rate_key, rate_limit, rate_per
)
SELECT %(name)s, %(queue)s, rows.key, rows.tenant, rows.payload, %(state)s, %(priority)s,
       %(run_at)s, %(max_attempts)s, rows.concurrency_key, %(concurrency_limit)s, %(now)s,
       %(traceparent)s, %(version)s, %(module)s, %(settle_hook)s,
       rows.rate_key, %(rate_limit)s, %(rate_per)s
FROM ROWS FROM (
    jsonb_array_elements_text(%(keys)s::jsonb),
    jsonb_array_elements_text(%(tenants)s::jsonb),
    jsonb_array_elements(%(payloads)s::jsonb),
    jsonb_array_elements_text(%(concurrency_keys)s::jsonb),
    jsonb_array_elements_text(%(rate_keys)s::jsonb)
) AS rows (key, tenant, payload, concurrency_key, rate_key)
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
-- prepared
-- Take up to `limit` due jobs without a concurrency limit: one statement, one new fence each.
-- Due-ness uses the worker's `now`; the lease expiry the database's clock ({db_now}).
-- litejobs_claimable_ids() and litejobs_limited_due() (migration 0011) read the claim and
-- limited indexes whatever the table's statistics are: the first locks the due jobs in
-- priority, run_at, id order, the second answers whether limited ones are due.
-- A last row of NULLs says that concurrency-limited jobs are due too (so an idle poll stays
-- one statement and the limited claim runs only when it has work). `avoid`: the ids this
-- worker handed back because its code cannot run them, left to other workers.
WITH picked AS (
    SELECT id FROM litejobs_claimable_ids(
        %(now)s, %(queues)s::text[], %(avoid)s::bigint[], %(limit)s::integer
    ) AS id
), claimed AS (
    UPDATE litejobs_job AS job
    SET state = 'running', attempts = job.attempts + 1, fence = nextval('litejobs_fence'),
        lease_owner = %(owner)s, lease_expires_at = {db_now} + %(lease)s::interval,
        started_at = %(now)s, cancel_requested = false
    FROM picked
    WHERE job.id = picked.id
    RETURNING job.id, job.name, job.queue, job.key, job.tenant, job.payload, job.attempts,
              job.max_attempts, job.fence, job.traceparent, job.occurrence_id, job.version,
              job.module
)
SELECT * FROM claimed
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
WHERE litejobs_limited_due(%(now)s, %(queues)s::text[], %(avoid)s::bigint[])

-- name: lock_limited_claims
-- Serialises claims of concurrency-limited jobs fleet-wide until the transaction ends.
SELECT pg_advisory_xact_lock(%(lock_id)s)

-- name: claim_limited
-- prepared
-- Take due limited jobs: never more per concurrency key than its limit minus those running,
-- never more per rate key than its limit minus its starts inside (now - per, now] on the
-- database's clock ({db_now}, read after the lock). The starts taken are appended to the
-- key's bucket (litejobs_rate) and older ones dropped, in this statement: the check and the
-- claim are one. Runs after lock_limited_claims in the same transaction, so its snapshot sees
-- every claim committed by the previous holder of the lock. A rate-limited job's started_at is
-- that same instant. Jobs with a rate and no concurrency limit are read per rate key (`keys`
-- walks their index from key to key), at most `limit` of each in claim order, so a backlog
-- of them costs a claim nothing. A last row of NULLs but `wake_at` says when a rate-limited
-- job left waiting may start (no notification announces a window's end).
WITH RECURSIVE keys (key) AS (
    (SELECT rate_key FROM litejobs_job
     WHERE state IN ({claimable}) AND rate_key IS NOT NULL AND concurrency_key IS NULL
     ORDER BY rate_key LIMIT 1)
    UNION ALL
    SELECT (SELECT job.rate_key FROM litejobs_job AS job
            WHERE job.state IN ({claimable}) AND job.rate_key IS NOT NULL
              AND job.concurrency_key IS NULL AND job.rate_key > keys.key
            ORDER BY job.rate_key LIMIT 1)
    FROM keys WHERE keys.key IS NOT NULL
), running AS (
    SELECT concurrency_key, count(*) AS n FROM litejobs_job
    WHERE state = 'running' AND concurrency_key IS NOT NULL
    GROUP BY concurrency_key
), candidates AS (
    SELECT id, concurrency_key, concurrency_limit, rate_key, rate_limit, rate_per, priority,
           run_at,
           row_number() OVER (
               PARTITION BY concurrency_key ORDER BY priority DESC, run_at, id
           ) AS position
    FROM litejobs_job
    WHERE state IN ({claimable})
      AND concurrency_key IS NOT NULL
      AND run_at <= %(now)s
      AND (%(queues)s::text[] IS NULL OR queue = ANY(%(queues)s::text[]))
      AND queue NOT IN (SELECT name FROM litejobs_queuestate WHERE paused)
      AND id <> ALL(%(avoid)s::bigint[])
), free AS (
    SELECT candidates.id, candidates.rate_key, candidates.rate_limit, candidates.rate_per,
           candidates.priority, candidates.run_at
    FROM candidates
    LEFT JOIN running ON running.concurrency_key = candidates.concurrency_key
    WHERE candidates.position <= candidates.concurrency_limit - COALESCE(running.n, 0)
    UNION ALL
    SELECT job.id, job.rate_key, job.rate_limit, job.rate_per, job.priority, job.run_at
    FROM keys
    CROSS JOIN LATERAL (
        SELECT id, rate_key, rate_limit, rate_per, priority, run_at FROM litejobs_job
        WHERE rate_key = keys.key AND state IN ({claimable}) AND concurrency_key IS NULL
          AND run_at <= %(now)s
          AND (%(queues)s::text[] IS NULL OR queue = ANY(%(queues)s::text[]))
          AND queue NOT IN (SELECT name FROM litejobs_queuestate WHERE paused)
          AND id <> ALL(%(avoid)s::bigint[])
        ORDER BY priority DESC, run_at, id
        LIMIT %(limit)s
    ) AS job
    WHERE keys.key IS NOT NULL
), ranked AS (
    SELECT free.*,
           row_number() OVER (
               PARTITION BY free.rate_key ORDER BY free.priority DESC, free.run_at, free.id
           ) AS turn
    FROM free
), room AS (
    SELECT wanted.key, wanted.lim, wanted.per, wanted.waiting,
           COALESCE(window_.used, 0) AS used, window_.oldest,
           wanted.lim - COALESCE(window_.used, 0) AS open
    FROM (
        SELECT rate_key AS key, min(rate_limit) AS lim, max(rate_per) AS per,
               count(*) AS waiting
        FROM free WHERE rate_key IS NOT NULL GROUP BY rate_key
    ) AS wanted
    LEFT JOIN litejobs_rate AS bucket ON bucket.key = wanted.key
    LEFT JOIN LATERAL (
        SELECT sum(log.n) AS used, min(log.start) AS oldest
        FROM unnest(bucket.starts, bucket.counts) AS log (start, n)
        WHERE log.start > {db_now} - wanted.per
    ) AS window_ ON true
), picked AS (
    SELECT ranked.id FROM ranked LEFT JOIN room ON room.key = ranked.rate_key
    WHERE ranked.rate_key IS NULL OR ranked.turn <= room.open
    ORDER BY ranked.priority DESC, ranked.run_at, ranked.id
    LIMIT %(limit)s
), claimed AS (
    UPDATE litejobs_job AS job
    SET state = 'running', attempts = job.attempts + 1, fence = nextval('litejobs_fence'),
        lease_owner = %(owner)s, lease_expires_at = {db_now} + %(lease)s::interval,
        started_at = CASE WHEN job.rate_key IS NULL THEN %(now)s ELSE {db_now} END,
        cancel_requested = false
    FROM picked
    WHERE job.id = picked.id AND job.state IN ({claimable})
    RETURNING job.id, job.name, job.queue, job.key, job.tenant, job.payload, job.attempts,
              job.max_attempts, job.fence, job.traceparent, job.occurrence_id, job.version,
              job.module, job.rate_key
), taken AS (
    SELECT rate_key AS key, count(*) AS n FROM claimed WHERE rate_key IS NOT NULL
    GROUP BY rate_key
), counted AS (
    INSERT INTO litejobs_rate AS bucket (key, "limit", per, starts, counts, last_start_at)
    SELECT room.key, room.lim, room.per, ARRAY[{db_now}::timestamptz], ARRAY[taken.n::integer],
           {db_now}
    FROM taken JOIN room ON room.key = taken.key
    ON CONFLICT (key) DO UPDATE
    SET (starts, counts) = (
            -- The entries still in the window, those less than per / 500 old merged into
            -- this claim's (counted as if later: in the window longer, never shorter).
            SELECT array_agg(merged.start ORDER BY merged.start),
                   array_agg(merged.n ORDER BY merged.start)
            FROM (
                SELECT CASE WHEN log.start BETWEEN {db_now} - EXCLUDED.per / 500 AND {db_now}
                            THEN {db_now} ELSE log.start END AS start,
                       sum(log.n)::integer AS n
                FROM (
                    SELECT * FROM unnest(bucket.starts, bucket.counts) AS kept (start, n)
                    WHERE kept.start > {db_now} - EXCLUDED.per
                    UNION ALL
                    SELECT * FROM unnest(EXCLUDED.starts, EXCLUDED.counts) AS added (start, n)
                ) AS log
                GROUP BY 1
            ) AS merged
        ),
        "limit" = EXCLUDED."limit", per = EXCLUDED.per, last_start_at = EXCLUDED.last_start_at
)
SELECT id, name, queue, key, tenant, payload, attempts, max_attempts, fence, traceparent,
       occurrence_id, version, module, NULL::timestamptz AS wake_at
FROM claimed
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       min(CASE WHEN room.used + COALESCE(taken.n, 0) < room.lim THEN {db_now}
                ELSE COALESCE(room.oldest, {db_now}) + room.per END)
FROM room LEFT JOIN taken ON taken.key = room.key
WHERE room.waiting > room.open
HAVING count(*) > 0

-- name: queue_counts
-- Jobs per queue and state among the live and dead ones, with the due ones and the oldest due
-- job's run_at (the queue overview, the dashboard). Each branch reads one partial index (the
-- live key's, the dead jobs'): a million done rows cost nothing.
SELECT queue, state, count(*) AS count,
       count(*) FILTER (WHERE state IN ({claimable}) AND run_at <= %(now)s) AS due,
       min(run_at) FILTER (WHERE state IN ({claimable}) AND run_at <= %(now)s) AS oldest_due
FROM (
    SELECT queue, state, run_at FROM litejobs_job WHERE state IN ({live})
    UNION ALL
    SELECT queue, state, run_at FROM litejobs_job WHERE state = 'dead'
) AS board
GROUP BY queue, state

-- name: next_due
-- The earliest run_at after `now` among claimable jobs of some queues (an idle worker sleeps
-- until then; what is due already, a claim takes).
SELECT min(run_at) AS due FROM litejobs_job
WHERE state IN ({claimable}) AND run_at > %(now)s
  AND (%(queues)s::text[] IS NULL OR queue = ANY(%(queues)s::text[]))

-- name: complete
-- prepared
-- The fenced completion of one job; run inside the body's transaction (atomic jobs). It
-- counts the job in its minute's counters (its session's own row: no wait on other workers).
WITH settled AS (
    UPDATE litejobs_job
    SET state = 'done', finished_at = %(now)s, result = %(result)s::jsonb,
        lease_expires_at = NULL
    WHERE id = %(id)s AND fence = %(fence)s AND state COLLATE "C" = 'running'
    RETURNING queue, name, 'done' AS outcome, run_at AS due_at, started_at, finished_at AS at
), counted AS (
    {count_completed}
)
SELECT 1 AS done FROM settled

-- name: complete_batch
-- prepared
-- The batched, fenced acknowledgement of atomic=False jobs; answers the ids it completed and
-- counts them in the per-minute counters (one upsert per minute, queue and name).
-- The jobs are locked in id order, as the heartbeat's renewal locks them, whatever order the
-- batch and the plan take: the two never deadlock over one worker's jobs.
WITH acks AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(fences)s::bigint[], %(finished)s::timestamptz[],
                         %(results)s::jsonb[]) AS acks (id, fence, finished_at, result)
), locked AS (
    SELECT job.id FROM litejobs_job AS job JOIN acks ON job.id = acks.id
    WHERE job.fence = acks.fence AND job.state COLLATE "C" = 'running'
    ORDER BY job.id
    FOR UPDATE OF job
)
, completed AS (
    UPDATE litejobs_job AS job
    SET state = 'done', finished_at = acks.finished_at, result = acks.result,
        lease_expires_at = NULL
    FROM acks
    WHERE job.id = acks.id AND job.id IN (SELECT id FROM locked)
    RETURNING job.id, job.queue, job.name, job.run_at, job.started_at, job.finished_at
), settled AS (
    SELECT queue, name, 'done' AS outcome, run_at AS due_at, started_at, finished_at AS at
    FROM completed
), counted AS (
    {count_settled}
)
SELECT id FROM completed

-- name: fail
-- The fenced end of a failed attempt: back to `failed` (retry at run_at), or `dead`, or
-- `cancelled`, with the attempt kept in the history. History rows are numbered in the order
-- they are kept, across operator retries (which start the job's attempts again from 0). The
-- attempt is counted in the per-minute counters under its new state; `due` is the run_at it
-- was claimed at (its latency's start), read in the statement's snapshot before the update.
WITH due AS (
    SELECT run_at FROM litejobs_job WHERE id = %(id)s
), failed AS (
    UPDATE litejobs_job
    SET state = %(state)s, run_at = COALESCE(%(run_at)s, run_at), finished_at = %(finished_at)s,
        lease_expires_at = NULL, handed_back_at = NULL, error_class = %(error_class)s,
        error_message = %(error_message)s, error_traceback = %(error_traceback)s
    WHERE id = %(id)s AND fence = %(fence)s AND state COLLATE "C" = 'running'
    RETURNING id, queue, name, started_at
), settled AS (
    SELECT queue, name, %(state)s::text AS outcome, due.run_at AS due_at, started_at,
           %(now)s::timestamptz AS at
    FROM failed, due
), counted AS (
    {count_settled}
)
INSERT INTO litejobs_jobattempt (
    job_id, number, worker, started_at, finished_at, outcome,
    error_class, error_message, error_traceback
)
SELECT id, (SELECT count(*) + 1 FROM litejobs_jobattempt WHERE job_id = failed.id),
       %(owner)s, started_at, %(now)s, %(outcome)s,
       %(error_class)s, %(error_message)s, %(error_traceback)s
FROM failed
RETURNING job_id

-- name: discard
-- A spent job of a dead_letter=False declaration: removed instead of kept as dead (and
-- counted as dead in the per-minute counters).
WITH dropped AS (
    DELETE FROM litejobs_job
    WHERE id = %(id)s AND fence = %(fence)s AND state COLLATE "C" = 'running'
    RETURNING id, queue, name, run_at, started_at
), settled AS (
    SELECT queue, name, 'dead' AS outcome, run_at AS due_at, started_at,
           %(now)s::timestamptz AS at
    FROM dropped
), counted AS (
    {count_settled}
)
SELECT id FROM dropped

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
WHERE id = %(id)s AND fence = %(fence)s AND state COLLATE "C" = 'running'
  AND (handed_back_at IS NULL OR handed_back_at > %(now)s::timestamptz - %(grace)s::interval)
RETURNING handed_back_at

-- name: release
-- Hand claimed jobs back uncounted (drain, database outage, claimed but never started).
UPDATE litejobs_job AS job
SET state = 'ready', attempts = job.attempts - 1, lease_expires_at = NULL
FROM unnest(%(ids)s::bigint[], %(fences)s::bigint[]) AS held (id, fence)
WHERE job.id = held.id AND job.fence = held.fence AND job.state COLLATE "C" = 'running'
RETURNING job.id

-- name: progress
-- The latest progress of running jobs (throttled by the worker to one write a second).
UPDATE litejobs_job AS job
SET progress = updates.progress
FROM unnest(%(ids)s::bigint[], %(fences)s::bigint[], %(progress)s::jsonb[])
     AS updates (id, fence, progress)
WHERE job.id = updates.id AND job.fence = updates.fence AND job.state COLLATE "C" = 'running'

-- name: cancel
-- An operator's cancel of one live job, in one statement: cancelled at once, or, while a
-- worker holds it under a current lease, cancel_requested for that worker's heartbeat. A
-- running job whose lease lapsed (its worker is gone) is cancelled at once and its lost
-- attempt recorded, so the reaper cannot hand it back to a worker. A job cancelled at once is
-- counted in the per-minute counters (with a duration only if it had been running).
WITH target AS (
    SELECT id, state AS was, lease_owner, started_at,
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
    RETURNING job.id, job.state, target.was, job.lease_owner, job.queue, job.name,
              job.run_at, job.started_at
), settled AS (
    SELECT queue, name, 'cancelled' AS outcome, run_at AS due_at,
           CASE WHEN was = 'running' THEN started_at END AS started_at,
           %(now)s::timestamptz AS at
    FROM changed
    WHERE state = 'cancelled'
), counted AS (
    {count_settled}
), lost AS (
    INSERT INTO litejobs_jobattempt (
        job_id, number, worker, started_at, finished_at, outcome,
        error_class, error_message, error_traceback
    )
    SELECT id, (SELECT count(*) + 1 FROM litejobs_jobattempt WHERE job_id = target.id),
           lease_owner, started_at, %(now)s, 'lease_expired',
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

-- name: job_suspend
-- A held job sleeps (or waits for an operator) without a worker: `waiting` until run_at, its
-- attempt uncounted (the same attempt number resumes), fenced.
UPDATE litejobs_job
SET state = 'waiting', attempts = attempts - 1, run_at = %(run_at)s, lease_expires_at = NULL,
    error_class = %(error_class)s, error_message = %(error_message)s
WHERE id = %(id)s AND fence = %(fence)s AND state COLLATE "C" = 'running'

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
WHERE id = %(id)s AND fence = %(fence)s AND state COLLATE "C" = 'running'
