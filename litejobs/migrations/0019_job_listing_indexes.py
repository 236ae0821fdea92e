# The admin job listing's filter indexes, over finished jobs only (see admin/joblisting.py).
# Built CONCURRENTLY: on a large table a plain CREATE INDEX would hold enqueues and settles
# for as long as it takes to build.

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models

import litejobs.models.jobs

FINISHED = models.Q(("state__in", ("done", "dead", "cancelled")))


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("litejobs", "0018_page_names"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="job",
            index=models.Index(
                condition=models.Q(
                    ("state__in", ("done", "dead", "cancelled")),
                    models.Q(("tenant", ""), _negated=True),
                ),
                fields=["tenant", "id"],
                name="litejobs_job_done_tenant",
            ),
        ),
        AddIndexConcurrently(
            model_name="job",
            index=models.Index(condition=FINISHED, fields=["key"], name="litejobs_job_done_key"),
        ),
        AddIndexConcurrently(
            model_name="job",
            index=models.Index(
                condition=FINISHED, fields=["created_at"], name="litejobs_job_done_created"
            ),
        ),
        AddIndexConcurrently(
            model_name="job",
            index=models.Index(
                condition=FINISHED, fields=["name", "id"], name="litejobs_job_done_name"
            ),
        ),
        AddIndexConcurrently(
            model_name="job",
            index=models.Index(
                condition=FINISHED, fields=["queue", "id"], name="litejobs_job_done_queue"
            ),
        ),
        AddIndexConcurrently(
            model_name="job",
            index=litejobs.models.jobs.JsonGinIndex(
                condition=FINISHED,
                fields=["payload"],
                name="litejobs_job_done_payload",
                opclasses=["jsonb_path_ops"],
            ),
        ),
    ]
