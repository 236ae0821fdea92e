-- The per-minute job counters (litejobs.models.minutes): what the dashboard charts read, and
-- their purge. Written by the settling statements ({count_settled}), read only here.

-- name: minute_counts
-- Jobs settled per period (`step` wide, from `start`) and outcome, summed over names and
-- shards, with the due -> start latency histogram (l1 .. l15: the buckets of litejobs_buckets,
-- summed element by element: no unnest, one pass over the rows).
SELECT date_bin(%(step)s::interval, minute, %(start)s::timestamptz) AS period, outcome,
       sum(count)::bigint AS count,
       sum(latency_buckets[1])::bigint AS l1,
       sum(latency_buckets[2])::bigint AS l2,
       sum(latency_buckets[3])::bigint AS l3,
       sum(latency_buckets[4])::bigint AS l4,
       sum(latency_buckets[5])::bigint AS l5,
       sum(latency_buckets[6])::bigint AS l6,
       sum(latency_buckets[7])::bigint AS l7,
       sum(latency_buckets[8])::bigint AS l8,
       sum(latency_buckets[9])::bigint AS l9,
       sum(latency_buckets[10])::bigint AS l10,
       sum(latency_buckets[11])::bigint AS l11,
       sum(latency_buckets[12])::bigint AS l12,
       sum(latency_buckets[13])::bigint AS l13,
       sum(latency_buckets[14])::bigint AS l14,
       sum(latency_buckets[15])::bigint AS l15
FROM litejobs_jobminute
WHERE minute >= %(start)s AND minute < %(end)s
GROUP BY 1, 2

-- name: purge_minutes
-- Counters of minutes older than their retention (two days: the dashboard shows one).
DELETE FROM litejobs_jobminute WHERE minute < %(before)s
