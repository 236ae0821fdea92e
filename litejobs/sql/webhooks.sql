-- Outbound webhooks: the delivery records the relay writes, and their retention.
-- Statements are read by litejobs.sql; values are bound parameters.

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
