-- Rate limits (litejobs.rates): reading the buckets the limited claim keeps, and their purge.
-- The claim's own half (counting and appending starts) is claim_limited in jobs.sql.

-- name: rate_buckets
-- Each bucket (up to `limit`, by key from `after`) with its starts inside (now - per, now]
-- on the database's clock, the oldest of them, and its due jobs waiting now.
SELECT bucket.key, bucket."limit", bucket.per, bucket.last_start_at,
       window_.used, window_.starts,
       (SELECT count(*) FROM litejobs_job AS job
        WHERE job.rate_key = bucket.key AND job.state IN ({claimable})
          AND job.run_at <= {db_now}) AS waiting
FROM litejobs_rate AS bucket
CROSS JOIN LATERAL (
    SELECT count(*) AS used, array_agg(start ORDER BY start) AS starts
    FROM unnest(bucket.starts) AS start
    WHERE start > {db_now} - bucket.per
) AS window_
WHERE bucket.key > %(after)s
ORDER BY bucket.key
LIMIT %(limit)s

-- name: rate_limited_waiting
-- Due rate-limited jobs whose bucket has no start left in its window, per queue (a metric).
SELECT job.queue, count(*) AS waiting
FROM litejobs_job AS job
JOIN litejobs_rate AS bucket ON bucket.key = job.rate_key
WHERE job.state IN ({claimable}) AND job.rate_key IS NOT NULL AND job.run_at <= {db_now}
  AND (SELECT count(*) FROM unnest(bucket.starts) AS start
       WHERE start > {db_now} - bucket.per) >= bucket."limit"
GROUP BY job.queue

-- name: rate_purge_idle
-- One bounded batch of idle buckets: no start in their window since `idle` ago. A bucket
-- whose window is empty counts nothing, so removing it changes no claim.
DELETE FROM litejobs_rate
WHERE key IN (
    SELECT key FROM litejobs_rate
    WHERE last_start_at + per < {db_now} - %(idle)s::interval
    ORDER BY key
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
