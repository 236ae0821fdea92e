-- Rate limits (litejobs.rates): reading the buckets the limited claim keeps, and their purge.
-- The claim's own half (counting and appending starts) is claim_limited in jobs.sql.

-- name: rate_buckets
-- Each bucket (up to `limit`, by key from `after`) with its entries inside (now - per, now]
-- on the database's clock (instants and counts, oldest first), and its due jobs waiting now.
SELECT bucket.key, bucket."limit", bucket.per, bucket.last_start_at,
       window_.starts, window_.counts,
       (SELECT count(*) FROM litejobs_job AS job
        WHERE job.rate_key = bucket.key AND job.state IN ({claimable})
          AND job.run_at <= {db_now}) AS waiting
FROM litejobs_rate AS bucket
CROSS JOIN LATERAL (
    SELECT array_agg(log.start ORDER BY log.start) AS starts,
           array_agg(log.n ORDER BY log.start) AS counts
    FROM unnest(bucket.starts, bucket.counts) AS log (start, n)
    WHERE log.start > {db_now} - bucket.per
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
  AND (SELECT COALESCE(sum(log.n), 0) FROM unnest(bucket.starts, bucket.counts) AS log (start, n)
       WHERE log.start > {db_now} - bucket.per) >= bucket."limit"
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
