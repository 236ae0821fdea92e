-- The transactional outbox: staging, publishing and retention of messages.
-- Statements are read by litejobs.sql; values are bound parameters.

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

-- name: outbox_subscriber_jobs
-- prepared
-- One subscriber's jobs for some published messages, each job's arguments (the envelope:
-- message id, topic, key, tenant, time and payload) built here from the stored message, so
-- the relay sends ids, not messages. A message whose job is live already gets none.
INSERT INTO litejobs_job (
    name, queue, key, tenant, payload, state, priority, run_at, max_attempts,
    concurrency_key, concurrency_limit, created_at, traceparent, version, module, settle_hook
)
SELECT %(name)s, %(queue)s, 'outbox:' || message.id, message.tenant,
       jsonb_build_object(
           'message_id', message.id, 'topic', message.topic, 'key', message.key,
           'tenant', message.tenant,
           'created_at', to_char(utc.at, 'YYYY-MM-DD"T"HH24:MI:SS')
               || CASE WHEN date_trunc('second', utc.at) = utc.at THEN ''
                       ELSE to_char(utc.at, '.US') END
               || '+00:00',
           'payload', message.payload
       ),
       %(state)s, %(priority)s, %(run_at)s, %(max_attempts)s, %(concurrency_key)s,
       %(concurrency_limit)s, %(now)s, %(traceparent)s, %(version)s, %(module)s,
       %(settle_hook)s
FROM litejobs_outboxmessage AS message
-- The time as Python's isoformat() writes it: microseconds only when there are some.
CROSS JOIN LATERAL (SELECT message.created_at AT TIME ZONE 'UTC') AS utc (at)
WHERE message.id = ANY(%(ids)s::bigint[])
ORDER BY message.id
ON CONFLICT (name, tenant, key) WHERE state IN ({live}) DO NOTHING
RETURNING id

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
