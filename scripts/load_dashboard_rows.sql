-- The dashboard's worst case: one million finished jobs (scripts/load_listing_rows.sql) and 72
-- per-minute counter rows a minute over the last two days (3 queues × 4 job names × 2
-- outcomes × 3 worker sessions), to measure the admin index.
-- psql -v ON_ERROR_STOP=1 -f scripts/load_dashboard_rows.sql <database>
\ir load_listing_rows.sql
INSERT INTO litejobs_jobminute (minute, queue, name, outcome, shard, count, timed,
                                duration_sum, latency_sum, duration_buckets, latency_buckets)
SELECT m, q, n, o, s, 10 + (h % 7), 10 + (h % 7), 1.5 * (10 + h % 7), 0.05 * (10 + h % 7),
       buckets, buckets
FROM generate_series(date_trunc('minute', now()) - interval '2 days',
                     date_trunc('minute', now()), interval '1 minute') AS m,
     unnest(ARRAY['default', 'mail', 'billing']) AS q,
     unnest(ARRAY['shop.send_receipt', 'shop.charge_card', 'mail.digest', 'media.thumbnail']) AS n,
     unnest(ARRAY['done', 'failed']) AS o,
     generate_series(101, 103) AS s,
     LATERAL (SELECT hashtext(m::text || q || n || o || s) & 1023 AS h) AS r,
     LATERAL (SELECT array_agg(CASE WHEN b = 1 + h % 6 THEN 6 WHEN b = 2 + h % 6 THEN 4 + h % 7
                                    ELSE 0 END ORDER BY b) AS buckets
              FROM generate_series(1, 15) AS b) AS histogram;
ANALYZE litejobs_jobminute;
