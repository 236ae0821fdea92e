-- Schedules and their occurrences: planning, disabling and retention.
-- Statements are read by litejobs.sql; values are bound parameters.

-- name: schedule_advance
-- Move a schedule's planned_through forward; locks the row, so a concurrent disable either
-- waits for this plan (and then cancels what it planned) or makes it plan nothing.
UPDATE litejobs_schedule SET planned_through = %(through)s
WHERE id = %(id)s AND enabled AND status = 'active'
  AND (planned_through IS NULL OR planned_through < %(through)s)
RETURNING id

-- name: occurrence_plan
-- One occurrence to run; its identity (schedule, instant) makes a second plan a no-op.
INSERT INTO litejobs_occurrence (
    schedule_id, scheduled_for, run_at, state, attempts, replays, created_at,
    last_scheduled_at, lease_owner, fence, tenant, error_class, error_message, note
) VALUES (
    %(schedule_id)s, %(scheduled_for)s, %(run_at)s, 'scheduled', 0, 0, %(now)s, %(now)s, '', 0,
    %(tenant)s, '', '', %(note)s
)
ON CONFLICT (schedule_id, scheduled_for) DO NOTHING
RETURNING id

-- name: occurrence_link_job
-- The job that runs an occurrence, recorded on it (the trigger follows only this job).
UPDATE litejobs_occurrence SET last_job_id = %(job_id)s WHERE id = %(id)s

-- name: occurrences_skip
-- Missed instants recorded as skipped occurrences (their identity taken, nothing run).
INSERT INTO litejobs_occurrence (
    schedule_id, scheduled_for, run_at, state, attempts, replays, created_at, finished_at,
    lease_owner, fence, tenant, error_class, error_message, note
)
SELECT %(schedule_id)s, instant, instant, 'skipped', 0, 0, %(now)s, %(now)s, '', 0, '', '', '',
       %(note)s
FROM unnest(%(instants)s::timestamptz[]) AS instant
ON CONFLICT (schedule_id, scheduled_for) DO NOTHING

-- name: schedule_cancel_unstarted
-- Disabling a schedule: the jobs of its occurrences that never started are cancelled (their
-- occurrences become skipped through the trigger); claimed ones finish.
UPDATE litejobs_job AS job
SET state = 'cancelled', finished_at = %(now)s
FROM litejobs_occurrence AS occurrence
WHERE occurrence.schedule_id = %(schedule_id)s AND occurrence.state = 'scheduled'
  AND occurrence.attempts = 0 AND job.id = occurrence.last_job_id
  AND job.state IN ('scheduled', 'ready')
RETURNING job.occurrence_id

-- name: occurrence_purge
-- One bounded batch of a schedule's finished occurrences older than its retention, with
-- their replay audit. Their jobs are purged by the jobs' own retention.
WITH doomed AS (
    SELECT id FROM litejobs_occurrence
    WHERE schedule_id = %(schedule_id)s AND scheduled_for < %(before)s
      AND state IN ({finished_occurrences})
    ORDER BY scheduled_for
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
), audit AS (
    DELETE FROM litejobs_occurrencereplay WHERE occurrence_id IN (SELECT id FROM doomed)
)
DELETE FROM litejobs_occurrence WHERE id IN (SELECT id FROM doomed)
