"""The claim reads the table through two functions whose plans do not depend on its statistics.

``litejobs_claimable_ids()`` locks the due jobs without a concurrency limit. A table that was
never analyzed (a new install's first backlog, or one just restored or upgraded) gives the
planner default guesses under which that looked cheaper as a bitmap scan that sorts every
ready job: tens of milliseconds a claim at 60,000 ready jobs, until the first autoanalyze.
Inside the function sorting is switched off, so the only plan left is the ordered walk of
``litejobs_job_claimable`` that stops after ``wanted`` unlocked rows.

``litejobs_limited_due()`` answers whether a concurrency-limited job is due. Statistics taken
while the table held only finished jobs call both the live-key and the limited index empty,
and the planner then walked the live-key index, every live job, on each claim. Ordered by
``concurrency_key`` with sorting off, only the limited index (keyed on it) can answer.

The state lists are those of the indexes' predicates; they change together.
"""

from django.db import migrations

CREATE = """
CREATE FUNCTION litejobs_claimable_ids(
    due_by timestamptz, serving text[], avoiding bigint[], wanted integer
) RETURNS SETOF bigint
LANGUAGE plpgsql VOLATILE ROWS 16
SET enable_sort = off
AS $$
BEGIN
    RETURN QUERY
    SELECT job.id FROM litejobs_job AS job
    WHERE job.state NOT IN ('running','done','dead','cancelled')
      AND job.concurrency_key IS NULL
      AND job.run_at <= due_by
      AND (serving IS NULL OR job.queue = ANY(serving))
      AND job.queue NOT IN (SELECT name FROM litejobs_queuestate WHERE paused)
      AND job.id <> ALL(avoiding)
    ORDER BY job.priority DESC, job.run_at, job.id
    LIMIT wanted
    FOR UPDATE SKIP LOCKED;
END
$$;

CREATE FUNCTION litejobs_limited_due(
    due_by timestamptz, serving text[], avoiding bigint[]
) RETURNS boolean
LANGUAGE plpgsql STABLE
SET enable_sort = off
AS $$
BEGIN
    PERFORM 1 FROM litejobs_job AS job
    WHERE job.state IN ('ready','scheduled','failed','waiting')
      AND job.concurrency_key IS NOT NULL
      AND job.run_at <= due_by
      AND (serving IS NULL OR job.queue = ANY(serving))
      AND job.id <> ALL(avoiding)
    ORDER BY job.concurrency_key
    LIMIT 1;
    RETURN FOUND;
END
$$
"""


class Migration(migrations.Migration):

    dependencies = [
        ('litejobs', '0010_security'),
    ]

    operations = [
        migrations.RunSQL(
            CREATE,
            reverse_sql="DROP FUNCTION litejobs_claimable_ids(timestamptz, text[], bigint[], integer); "
            "DROP FUNCTION litejobs_limited_due(timestamptz, text[], bigint[])",
        ),
    ]
