"""The per-minute job counters' histograms: bucket counts as ``bigint[]`` (a busy job name's
carried totals outgrow ``integer`` within weeks), and no SQL functions. The settling
statements and the folds build and add the bucket arrays with plain expressions: a SQL
function called in a statement run once per job is planned again on every call. Reversing
this migration restores the ``integer[]`` columns and the two functions.
"""

from django.db import migrations

FORWARD = """
DROP FUNCTION litejobs_buckets(double precision[]);
DROP FUNCTION litejobs_add_counts(integer[], integer[]);
ALTER TABLE litejobs_jobminute
    ALTER COLUMN duration_buckets TYPE bigint[],
    ALTER COLUMN latency_buckets TYPE bigint[];
"""

BACKWARD = """
ALTER TABLE litejobs_jobminute
    ALTER COLUMN duration_buckets TYPE integer[],
    ALTER COLUMN latency_buckets TYPE integer[];
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

CREATE FUNCTION litejobs_add_counts(a integer[], b integer[]) RETURNS integer[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT array_agg(COALESCE(x, 0) + COALESCE(y, 0) ORDER BY i)
    FROM unnest(a, b) WITH ORDINALITY AS pairs (x, y, i)
$$;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("litejobs", "0019_job_listing_indexes"),
    ]

    operations = [
        migrations.RunSQL(FORWARD, reverse_sql=BACKWARD),
    ]
