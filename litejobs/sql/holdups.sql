-- Why jobs wait (litejobs.jobs.holdups): what the claim would take before each of them.

-- name: jobs_ahead
-- For each due job asked about, how many due jobs the claim takes before it (capped at
-- `cap`): the same order as the claim (priority DESC, run_at, id). A job without a
-- concurrency limit is compared with the unlimited due jobs of its queue; a limited one with
-- the due jobs of its concurrency key. Paused queues take nothing, so none of theirs count.
SELECT wanted.id, (
    SELECT count(*) FROM (
        SELECT 1 FROM litejobs_job AS other
        WHERE other.state NOT IN ({unclaimable})
          AND other.run_at <= %(now)s
          AND other.queue NOT IN (SELECT name FROM litejobs_queuestate WHERE paused)
          AND CASE WHEN wanted.concurrency_key IS NULL
                   THEN other.concurrency_key IS NULL AND other.queue = wanted.queue
                   ELSE other.concurrency_key = wanted.concurrency_key END
          AND (other.priority > wanted.priority
               OR (other.priority = wanted.priority
                   AND (other.run_at, other.id) < (wanted.run_at, wanted.id)))
        LIMIT %(cap)s
    ) AS before_it
) AS ahead
FROM unnest(
    %(ids)s::bigint[], %(queues)s::text[], %(keys)s::text[], %(priorities)s::integer[],
    %(run_ats)s::timestamptz[]
) AS wanted (id, queue, concurrency_key, priority, run_at)
