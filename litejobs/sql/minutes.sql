-- The per-minute job counters (litejobs.models.minutes): what the dashboard charts read, and
-- their purge. Written by the settling statements ({count_settled}), read only here.

-- name: minute_counts
-- Jobs settled per period (`step` wide, from `start`) and outcome, summed over the shards.
SELECT date_bin(%(step)s::interval, minute, %(start)s::timestamptz) AS period, outcome,
       sum(count)::bigint AS count
FROM litejobs_jobminute
WHERE minute >= %(start)s AND minute < %(end)s
GROUP BY 1, 2

-- name: minute_latency
-- The due -> start latency histogram per period: bucket counts summed over names and shards
-- (`bucket` numbered from 1, as litejobs_buckets lays them out).
SELECT date_bin(%(step)s::interval, minute, %(start)s::timestamptz) AS period,
       buckets.bucket, sum(buckets.n)::bigint AS count
FROM litejobs_jobminute
CROSS JOIN LATERAL unnest(latency_buckets) WITH ORDINALITY AS buckets (n, bucket)
WHERE minute >= %(start)s AND minute < %(end)s
GROUP BY 1, 2

-- name: purge_minutes
-- Counters of minutes older than their retention (two days: the dashboard shows one).
DELETE FROM litejobs_jobminute WHERE minute < %(before)s
