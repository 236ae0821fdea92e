-- One million finished jobs (six months of them) plus some thousands of live ones, to measure the admin listing.
-- psql -v ON_ERROR_STOP=1 -f scripts/load_listing_rows.sql <database>
INSERT INTO litejobs_job (name, queue, key, tenant, payload, state, run_at, created_at,
                          started_at, finished_at, attempts, max_attempts)
SELECT (ARRAY['shop.send_receipt', 'shop.charge_card', 'billing.invoice', 'mail.digest',
              'search.reindex', 'media.thumbnail'])[1 + g % 6],
       (ARRAY['default', 'default', 'mail', 'billing', 'media'])[1 + g % 5],
       'order:' || g,
       CASE WHEN g % 4 = 0 THEN '' ELSE 'tenant-' || (g % 500) END,
       jsonb_build_object('order_id', g, 'customer', jsonb_build_object('id', g % 20000,
                          'country', (ARRAY['DE', 'FR', 'NL', 'US'])[1 + g % 4])),
       CASE WHEN g % 50 = 0 THEN 'dead' WHEN g % 37 = 0 THEN 'cancelled' ELSE 'done' END,
       t, t, t + interval '1 second', t + interval '2 seconds' + (g % 90) * interval '1 second',
       1 + (g % 50 = 0)::int * 4, 5
FROM (SELECT g, timestamptz '2026-06-01 00:00Z' + g * interval '15.5 seconds' AS t
      FROM generate_series(1, 1000000) AS g) AS rows;

INSERT INTO litejobs_job (name, queue, key, tenant, payload, state, run_at, created_at,
                          attempts, max_attempts, lease_owner, lease_expires_at)
SELECT (ARRAY['shop.send_receipt', 'shop.charge_card', 'mail.digest'])[1 + g % 3],
       (ARRAY['default', 'mail', 'billing'])[1 + g % 3],
       'live:' || g,
       'tenant-' || (g % 500),
       jsonb_build_object('order_id', 2000000 + g, 'customer', jsonb_build_object('id', g % 20000)),
       s.state, now() + (s.state = 'scheduled')::int * interval '1 hour', now() - interval '1 minute',
       (s.state IN ('running', 'failed'))::int, 5,
       CASE WHEN s.state = 'running' THEN 'worker-1' ELSE '' END,
       CASE WHEN s.state = 'running' THEN now() + interval '5 minutes' END
FROM generate_series(1, 5000) AS g,
     LATERAL (SELECT (ARRAY['ready', 'scheduled', 'running', 'failed', 'waiting'])[1 + g % 5] AS state) AS s;
ANALYZE litejobs_job;
