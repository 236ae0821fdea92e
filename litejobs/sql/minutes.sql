-- The per-minute job counters (litejobs.models.minutes): what the dashboard charts read, their
-- hourly rollup and their purge. Written by the settling statements ({count_settled}), read
-- only here.

-- name: minute_counts
-- Jobs settled per period (`step` wide, from `start`) and outcome, summed over names and
-- shards, with the due -> start latency histogram (l1 .. l15: the buckets of BUCKET_BOUNDS,
-- summed element by element: no unnest, one pass over the rows) and the latencies' sum.
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
       sum(latency_buckets[15])::bigint AS l15,
       sum(latency_sum)::float8 AS latency_sum
FROM litejobs_jobminute
WHERE minute >= %(start)s AND minute < %(end)s
GROUP BY 1, 2

-- name: fold_minutes
-- The counters of minutes before `before` folded into rows of shard 0 (no session writes it: a
-- backend pid is never 0), summed over shards and minutes per queue, name and outcome, in one
-- statement. With `carry` false, into the row of the minutes' hour (the dashboard's day chart
-- then sums one row an hour, not one a minute and session; rows already folded stay); with
-- `carry` true, into the carried row of minute 'epoch' (the purge after the counters' two
-- days): the totals since the start never go down. Two folds at once: each row is deleted by
-- one of them (the other waits for it, then skips the row), and the upsert adds to a row a
-- late writer or the other fold made, so nothing is lost or counted twice.
WITH gone AS (
    DELETE FROM litejobs_jobminute
    WHERE minute < %(before)s AND minute > 'epoch'::timestamptz AND (%(carry)s OR shard <> 0)
    RETURNING CASE WHEN %(carry)s THEN 'epoch'::timestamptz
                   ELSE date_trunc('hour', minute, 'UTC') END AS minute,
              queue, name, outcome, count, timed, duration_sum, latency_sum,
              duration_buckets, latency_buckets
), folded AS (
    SELECT minute, queue, name, outcome, sum(count) AS count, sum(timed) AS timed,
           sum(duration_sum) AS duration_sum, sum(latency_sum) AS latency_sum,
           {summed_duration_buckets} AS duration_buckets,
           {summed_latency_buckets} AS latency_buckets
    FROM gone
    GROUP BY minute, queue, name, outcome
), carried AS (
    INSERT INTO litejobs_jobminute AS counter (
        minute, queue, name, outcome, shard, count, timed, duration_sum, latency_sum,
        duration_buckets, latency_buckets
    )
    SELECT minute, queue, name, outcome, 0, count, timed, duration_sum, latency_sum,
           duration_buckets, latency_buckets
    FROM folded
    ON CONFLICT (minute, queue, name, outcome, shard) DO UPDATE SET
        count = counter.count + EXCLUDED.count,
        timed = counter.timed + EXCLUDED.timed,
        duration_sum = counter.duration_sum + EXCLUDED.duration_sum,
        latency_sum = counter.latency_sum + EXCLUDED.latency_sum,
        duration_buckets = {added_duration_buckets},
        latency_buckets = {added_latency_buckets}
)
SELECT count(*) AS folded FROM gone

-- name: minute_tallies
-- Every job name's started attempts per outcome since the start (the carried rows and the
-- kept minutes, over every queue and shard), with their duration histogram (d1 .. d15): what
-- the metrics' attempts counter and duration histogram answer.
SELECT name, outcome, sum(timed)::bigint AS timed, sum(duration_sum) AS duration_sum,
       sum(duration_buckets[1])::bigint AS d1,
       sum(duration_buckets[2])::bigint AS d2,
       sum(duration_buckets[3])::bigint AS d3,
       sum(duration_buckets[4])::bigint AS d4,
       sum(duration_buckets[5])::bigint AS d5,
       sum(duration_buckets[6])::bigint AS d6,
       sum(duration_buckets[7])::bigint AS d7,
       sum(duration_buckets[8])::bigint AS d8,
       sum(duration_buckets[9])::bigint AS d9,
       sum(duration_buckets[10])::bigint AS d10,
       sum(duration_buckets[11])::bigint AS d11,
       sum(duration_buckets[12])::bigint AS d12,
       sum(duration_buckets[13])::bigint AS d13,
       sum(duration_buckets[14])::bigint AS d14,
       sum(duration_buckets[15])::bigint AS d15
FROM litejobs_jobminute
GROUP BY name, outcome

-- name: dashboard_version
-- What the live dashboard polls about once a second while a page is open
-- (litejobs.live.watcher): jobs settled in the current and the previous minute (the primary
-- key's range on minute), the last fence handed out (every claim takes one: read from the
-- sequence, not from the jobs, whose running ones the planner may look for through every live
-- job) and the live workers. Any change of it means the dashboard shows something else;
-- completions and claims fire no NOTIFY.
SELECT (SELECT COALESCE(sum(count), 0)::bigint FROM litejobs_jobminute
        WHERE minute >= date_trunc('minute', {db_now}, 'UTC') - interval '1 minute') AS settled,
       (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM litejobs_fence) AS claimed,
       (SELECT count(*) FROM litejobs_worker WHERE lease_expires_at > {db_now}) AS workers
