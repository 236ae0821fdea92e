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
