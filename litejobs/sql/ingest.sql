-- Ingest pipelines: the buffer, the records set aside, the counts, the file imports and the
-- consumers' positions.
-- Statements are read by litejobs.sql; values are bound parameters.

-- name: ingest_buffered
-- How many records wait in one pipeline's buffer, counted up to a bound (the capacity and
-- the feed's size): beyond it the exact number changes nothing.
SELECT count(*) AS buffered
FROM (
    SELECT 1 FROM litejobs_bufferedrecord
    WHERE pipeline = %(pipeline)s
    LIMIT %(bound)s
) AS waiting

-- name: ingest_feed
-- A feed's records, in the caller's transaction, in the order given.
INSERT INTO litejobs_bufferedrecord (pipeline, key, payload, fed_at)
SELECT %(pipeline)s, fed.key, fed.payload::jsonb, %(now)s
FROM unnest(%(keys)s::text[], %(payloads)s::text[]) WITH ORDINALITY AS fed (key, payload, n)
ORDER BY fed.n

-- name: ingest_drop_oldest
-- Past capacity with overflow drop_oldest: the oldest buffered records no drain holds move
-- to the records set aside, dropped with the declared reason.
WITH oldest AS (
    DELETE FROM litejobs_bufferedrecord
    WHERE id IN (
        SELECT id FROM litejobs_bufferedrecord
        WHERE pipeline = %(pipeline)s
        ORDER BY id
        LIMIT %(count)s
        FOR UPDATE SKIP LOCKED
    )
    RETURNING pipeline, key, payload
)
INSERT INTO litejobs_setasiderecord (
    pipeline, key, outcome, reason, step, error, attempts, payload, set_aside_at
)
SELECT pipeline, key, 'dropped', %(reason)s, 'buffer', '', 0, payload, %(now)s
FROM oldest

-- name: ingest_take
-- The next records of a pipeline's buffer, oldest first, locked until the batch commits.
SELECT id, key, payload::text AS payload
FROM litejobs_bufferedrecord
WHERE pipeline = %(pipeline)s
ORDER BY id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED

-- name: ingest_remove
-- Records of a batch that left the buffer (accepted, dropped or errored).
DELETE FROM litejobs_bufferedrecord WHERE id = ANY(%(ids)s::bigint[])

-- name: ingest_set_aside
-- A batch's dropped and errored records, kept for replay.
INSERT INTO litejobs_setasiderecord (
    pipeline, key, outcome, reason, step, error, attempts, payload, set_aside_at
)
SELECT %(pipeline)s, aside.key, aside.outcome, aside.reason, aside.step, aside.error,
       aside.attempts, aside.payload::jsonb, %(now)s
FROM unnest(
    %(keys)s::text[], %(outcomes)s::text[], %(reasons)s::text[], %(steps)s::text[],
    %(errors)s::text[], %(attempts)s::int[], %(payloads)s::text[]
) AS aside (key, outcome, reason, step, error, attempts, payload)

-- name: ingest_count
-- Add a batch's outcomes to the hour's counts, in the transaction that decides them.
INSERT INTO litejobs_ingestcount (pipeline, hour, outcome, reason, count)
SELECT %(pipeline)s, date_trunc('hour', %(now)s::timestamptz, 'UTC'),
       counted.outcome, counted.reason, counted.count
FROM unnest(%(outcomes)s::text[], %(reasons)s::text[], %(counts)s::bigint[])
    AS counted (outcome, reason, count)
ON CONFLICT (pipeline, hour, outcome, reason)
DO UPDATE SET count = litejobs_ingestcount.count + excluded.count

-- name: ingest_totals
-- Some pipelines' outcomes since they began (stats(), the admin, the CLI, the metrics).
SELECT pipeline, outcome, reason, sum(count)::bigint AS count
FROM litejobs_ingestcount
WHERE pipeline = ANY(%(names)s::text[])
GROUP BY pipeline, outcome, reason

-- name: ingest_replay
-- Feed the records of one reason (or the errored ones) back into the buffer, oldest first,
-- and mark them replayed, in one transaction.
WITH replayed AS (
    UPDATE litejobs_setasiderecord
    SET replayed_at = %(now)s
    WHERE id IN (
        SELECT id FROM litejobs_setasiderecord
        WHERE pipeline = %(pipeline)s AND outcome = %(outcome)s AND reason = %(reason)s
          AND replayed_at IS NULL
        ORDER BY id
        LIMIT %(limit)s
        FOR UPDATE SKIP LOCKED
    )
    RETURNING id, key, payload
)
INSERT INTO litejobs_bufferedrecord (pipeline, key, payload, fed_at)
SELECT %(pipeline)s, key, payload, %(now)s FROM replayed ORDER BY id

-- name: ingest_feeding
-- A feed holds this shared lock on its pipeline until it commits: a drain that finds the
-- buffer empty finishes only once it holds the lock alone (ingest_drain_lock), so it cannot
-- finish while a feed it would not see yet is still uncommitted.
SELECT pg_advisory_xact_lock_shared(hashtextextended('litejobs.ingest:' || %(pipeline)s, 0))

-- name: ingest_drain_lock
-- Whether no feed of the pipeline is uncommitted: the lock, taken only when free, is held
-- until this transaction ends. Only a statement after this one sees what those feeds wrote.
SELECT pg_try_advisory_xact_lock(hashtextextended('litejobs.ingest:' || %(pipeline)s, 0))
    AS alone

-- name: ingest_drained
-- Whether the pipeline's buffer is empty (after ingest_drain_lock: the drain may finish).
SELECT NOT EXISTS (
    SELECT 1 FROM litejobs_bufferedrecord WHERE pipeline = %(pipeline)s
) AS drained

-- name: ingest_job_running
-- Whether a drain job a feed woke is already running (its end might then come first).
SELECT state = 'running' AS running FROM litejobs_job WHERE id = %(id)s

-- name: ingest_overflow_event
-- A feed went past its pipeline's capacity: what the declared overflow did (the admin's
-- alert, the overflow metric).
INSERT INTO litejobs_overflowevent (pipeline, overflow, at, capacity, buffered, fed, dropped, refused)
VALUES (%(pipeline)s, %(overflow)s, %(now)s, %(capacity)s, %(buffered)s, %(fed)s, %(dropped)s, false)

-- name: ingest_hourly
-- A pipeline's counts per hour from an instant, by outcome and reason (the admin's chart).
SELECT hour, outcome, reason, sum(count)::bigint AS count
FROM litejobs_ingestcount
WHERE pipeline = %(pipeline)s AND hour >= %(since)s
GROUP BY hour, outcome, reason
ORDER BY hour

-- name: ingest_purge_set_aside
-- One bounded batch of set-aside records older than the retention.
DELETE FROM litejobs_setasiderecord
WHERE id IN (
    SELECT id FROM litejobs_setasiderecord
    WHERE set_aside_at < %(before)s
    ORDER BY id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)

-- name: ingest_purge_imports
-- One bounded batch of finished file imports older than the retention, with their error
-- reports (the foreign key is checked at the end of the statement).
WITH runs AS (
    SELECT id FROM litejobs_importrun
    WHERE finished_at < %(before)s
    ORDER BY id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), reports AS (
    DELETE FROM litejobs_importrefusal WHERE run_id IN (SELECT id FROM runs)
)
DELETE FROM litejobs_importrun WHERE id IN (SELECT id FROM runs)

-- name: ingest_purge_overflow_events
-- One bounded batch of overflow events older than the retention.
DELETE FROM litejobs_overflowevent
WHERE id IN (
    SELECT id FROM litejobs_overflowevent
    WHERE at < %(before)s
    ORDER BY id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)

-- name: ingest_backlog
-- Some pipelines' buffered records: how many, and when the oldest was fed.
SELECT pipeline, count(*) AS buffered, min(fed_at) AS oldest
FROM litejobs_bufferedrecord
WHERE pipeline = ANY(%(names)s::text[])
GROUP BY pipeline

-- name: ingest_imports_failed
-- File imports still running whose job has ended without finishing them (dead or
-- cancelled): nothing will carry them on.
SELECT run.id, run.pipeline, run.file, job.state
FROM litejobs_importrun AS run
JOIN litejobs_job AS job
  ON job.name = %(job)s AND job.key = 'ingest-import:' || run.id
WHERE run.state = 'running' AND job.state IN ('dead', 'cancelled')
ORDER BY run.id

-- name: ingest_position_read
-- Where a consumer stands: its position and how many times it moved (no row: never).
SELECT position::text AS position, batches
FROM litejobs_ingestposition
WHERE pipeline = %(pipeline)s AND key = %(key)s

-- name: ingest_position_move
-- Move a consumer's position past the batch this transaction writes, only from where that batch
-- was read (`seen`: its moves then). An answer other than seen + 1 (or none) means another
-- run moved it meanwhile: the caller rolls the batch back.
INSERT INTO litejobs_ingestposition (pipeline, key, position, batches, updated_at)
VALUES (%(pipeline)s, %(key)s, %(position)s::jsonb, 1, %(now)s)
ON CONFLICT (pipeline, key) DO UPDATE
SET position = excluded.position,
    batches = litejobs_ingestposition.batches + 1,
    updated_at = excluded.updated_at
WHERE litejobs_ingestposition.batches = %(seen)s
RETURNING batches
