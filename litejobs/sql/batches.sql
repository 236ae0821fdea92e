-- Batches and job dependencies: the writes of litejobs.batches. What happens when a child or
-- an upstream job ends is the job table's triggers' (migration 0027_batches), in the
-- transaction that writes the ending.

-- name: batch_hold
-- A batch's callback jobs, inserted with it, held until the batch releases them.
UPDATE litejobs_job SET state = 'waiting', run_at = %(held)s
WHERE id = ANY(%(ids)s::bigint[]) AND state IN ({claimable})
RETURNING id

-- name: batch_join
-- Enqueued jobs join an open batch under its row's lock (so no child ends uncounted between
-- the two): the ones not in a batch and not ended yet (a deduplicated enqueue's live job
-- joins too). Answers whether the batch was open and how many joined.
WITH batch AS (
    SELECT id FROM litejobs_batch WHERE id = %(batch)s AND state = 'open' FOR UPDATE
), joined AS (
    UPDATE litejobs_job AS job SET batch_id = batch.id
    FROM batch
    WHERE job.id = ANY(%(ids)s::bigint[]) AND job.batch_id IS NULL AND job.state IN ({live})
    RETURNING job.id
), counted AS (
    UPDATE litejobs_batch
    SET total = total + (SELECT count(*) FROM joined),
        pending = pending + (SELECT count(*) FROM joined)
    WHERE id IN (SELECT id FROM batch)
    RETURNING id
)
SELECT (SELECT count(*) FROM counted) AS open, (SELECT count(*) FROM joined) AS joined

-- name: batch_seal
-- The block that opened a batch ended: its callback is released now if no child is left.
SELECT litejobs_batch_seal(%(batch)s, %(now)s) AS state

-- name: depend
-- A new job waits on its upstream jobs: the ended and missing ones resolved at once, the
-- others locked and marked as having dependants. Answers the job's state after it.
SELECT litejobs_depend(%(job)s, %(upstreams)s::bigint[], %(policy)s, %(run_at)s, %(now)s) AS state

-- name: dependency_cycle
-- Whether `job` is one of `upstreams` or waits on one of them, directly or through others.
WITH RECURSIVE downstream (id) AS (
    SELECT %(job)s::bigint
    UNION
    SELECT dependency.job_id FROM litejobs_jobdependency AS dependency
    JOIN downstream ON dependency.upstream_id = downstream.id
)
SELECT id FROM downstream WHERE id = ANY(%(upstreams)s::bigint[]) LIMIT 1

-- name: batches_purge
-- One bounded batch of completed batches whose last child ended before `before`.
WITH doomed AS (
    SELECT id FROM litejobs_batch
    WHERE state = 'completed' AND completed_at < %(before)s
    ORDER BY completed_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
DELETE FROM litejobs_batch WHERE id IN (SELECT id FROM doomed)

-- name: dependencies_purge
-- One bounded batch of the dependencies of jobs that are gone (purged after they ended).
WITH doomed AS (
    SELECT dependency.id FROM litejobs_jobdependency AS dependency
    WHERE NOT EXISTS (SELECT 1 FROM litejobs_job AS job WHERE job.id = dependency.job_id)
    LIMIT %(limit)s
)
DELETE FROM litejobs_jobdependency WHERE id IN (SELECT id FROM doomed)
