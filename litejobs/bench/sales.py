"""W12's sales table: the rows its report exports and its floor copies out, written by one
``generate_series`` statement (untimed) in the scratch database.

Two tenants hold rows: ``LARGE`` the export's full size, ``SMALL`` a tenth of it (the export
whose worker memory the full one's is compared with). Each row has the report's seven columns
of mixed types; some notes hold a comma or a quote (CSV quotes them) and some start with ``-``
(the report escapes them as formulas).
"""

from __future__ import annotations

from typing import Any

import psycopg

#: The table (also the report's model's ``db_table``).
TABLE = "litejobs_bench_sales"
#: The exported columns, in order: text, text, numeric, text, text, date, timestamptz.
COLUMNS = ("number", "customer", "amount", "status", "note", "placed", "paid_at")
#: The tenants: the full export's and the tenth's. The bench's users are named after them.
LARGE = "litejobs-bench-large"
SMALL = "litejobs-bench-small"

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    id bigint PRIMARY KEY,
    tenant text NOT NULL,
    number text NOT NULL,
    customer text NOT NULL,
    amount numeric(12, 2) NOT NULL,
    status text NOT NULL,
    note text NOT NULL,
    placed date NOT NULL,
    paid_at timestamptz
);
CREATE INDEX IF NOT EXISTS {TABLE}_tenant ON {TABLE} (tenant, id);
"""
FILL = f"""
INSERT INTO {TABLE} (id, tenant, number, customer, amount, status, note, placed, paid_at)
SELECT n, CASE WHEN n <= %(large)s THEN %(large_tenant)s ELSE %(small_tenant)s END,
       'S' || lpad(n::text, 9, '0'),
       'Customer ' || (n * 7919) %% 5000,
       ((n * 104729) %% 1000000) / 100.0,
       (ARRAY['paid', 'refunded', 'pending'])[n %% 3 + 1],
       CASE n %% 50 WHEN 0 THEN 'wrapped, with a card' WHEN 1 THEN 'said "thanks"'
            WHEN 2 THEN '-5 discount' ELSE 'order note ' || n END,
       date '2026-01-01' + (n %% 365)::int,
       CASE WHEN n %% 3 = 0 THEN NULL
            ELSE timestamptz '2026-01-01 00:00+00' + n * interval '7 seconds' END
FROM generate_series(1::bigint, %(large)s + %(small)s) AS n
"""


def fill(conn: psycopg.Connection, large: int, small: int) -> None:
    """Create the table if needed and fill it: ``large`` rows of ``LARGE``, then ``small`` of
    ``SMALL``; vacuumed and analysed, so neither side's first read rewrites a page."""
    conn.execute(SCHEMA)
    conn.execute(f"TRUNCATE {TABLE}")
    params: dict[str, Any] = {
        "large": large,
        "small": small,
        "large_tenant": LARGE,
        "small_tenant": SMALL,
    }
    conn.execute(FILL, params)
    conn.execute(f"VACUUM (ANALYZE) {TABLE}")
