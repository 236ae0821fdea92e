"""The claim takes its jobs through ``litejobs_claimable_ids()``, a function that walks the claim
index in order whatever the table's statistics say.

A table that was never analyzed (a new install's first backlog, or one just restored or
upgraded) gives the planner default guesses under which the claim looked cheaper as a bitmap
scan that sorts every ready job: tens of milliseconds a claim at 60,000 ready jobs, until the
first autoanalyze. Inside the function sorting is switched off, so the only plan left is the
ordered walk of ``litejobs_job_claimable`` that stops after ``wanted`` unlocked rows.

The state list is that of the claim index's predicate; both change together.
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
$$
"""


class Migration(migrations.Migration):

    dependencies = [
        ('litejobs', '0010_security'),
    ]

    operations = [
        migrations.RunSQL(
            CREATE,
            reverse_sql="DROP FUNCTION litejobs_claimable_ids(timestamptz, text[], bigint[], integer)",
        ),
    ]
