"""The settling statements bucket durations and latencies with plain expressions (a SQL
function called in a statement run once per job is planned again on every call), so the
function ``litejobs_buckets`` goes; reversing this migration creates it again.
"""

from django.db import migrations

RESTORE = """
CREATE FUNCTION litejobs_buckets(seconds double precision[]) RETURNS integer[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_agg(COALESCE(counted.n, 0) ORDER BY bucket)
    FROM generate_series(0, 14) AS bucket
    LEFT JOIN (
        SELECT width_bucket(s, ARRAY[0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300,
                                     900, 3600]::double precision[]) AS bucket,
               count(*)::integer AS n
        FROM unnest(seconds) AS s
        WHERE s IS NOT NULL
        GROUP BY 1
    ) AS counted USING (bucket)
$$;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("litejobs", "0019_job_listing_indexes"),
    ]

    operations = [
        migrations.RunSQL(
            "DROP FUNCTION litejobs_buckets(double precision[])",
            reverse_sql=RESTORE,
        ),
    ]
