"""W11's ingest pipeline: one drop step, one enrich step, and a sink writing each kept record
into the bench's products table, the table the floor fills with ``COPY``.

Declared only where it runs: in the bench's worker processes for their life (``declare()``),
and in the bench process while W11 or W11F runs (``declared()``), so importing the bench
declares nothing that a project's pipelines (their list, their checks) would show.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import psycopg
from django.db import connections

from ..conf import settings
from ..ingest import Buffer, Files, Pipeline, drop, enrich, pipeline
from ..ingest.declarations import pipelines
from ..sql.cursors import hot_cursor
from . import files, floor

NAME = "litejobs.bench.catalog"
#: Records per page of an import (and per batch of a drain): one transaction each.
PAGE = 1000
RATES = {"EUR": 1.0, "USD": 0.92, "GBP": 1.17}
#: The products table's columns the sink writes: the CSV's, and the price in euros.
COLUMNS = (*files.COLUMNS, "price_eur")
UPSERT = f"""
INSERT INTO {floor.PRODUCTS} (sku, name, price, currency, status, price_eur)
VALUES (%s, %s, %s, %s, %s, %s)
ON CONFLICT (sku) DO UPDATE SET name = excluded.name, price = excluded.price,
    currency = excluded.currency, status = excluded.status, price_eur = excluded.price_eur
"""


class Reason(enum.Enum):
    """Why the bench's pipeline drops a record."""

    DISCONTINUED = "discontinued"
    POISON = "poison"


@drop(reasons={Reason.DISCONTINUED})
def discontinued(record: Mapping[str, Any]) -> Reason | None:
    """Drop a discontinued product."""
    return Reason.DISCONTINUED if record["status"] == "discontinued" else None


@enrich(sources={"rates"})
def price_in_eur(record: Mapping[str, Any], sources: Mapping[str, Any]) -> dict[str, Any]:
    """The record with its price in euros."""
    rate = sources["rates"][record["currency"]]
    return {**record, "price_eur": round(float(record["price"]) * rate, 2)}


def write(record: Mapping[str, Any]) -> None:
    """The sink: the record's row created or updated by sku, in one prepared statement on the
    pipeline's connection (in the page's transaction): the least a sink called once per
    record can send. A sink through Django's cursor pays its client-side binding on top."""
    values = [record[column] for column in COLUMNS]
    with hot_cursor(connections[settings.DATABASE]) as cursor:
        if isinstance(cursor, psycopg.Cursor):
            cursor.execute(UPSERT, values, prepare=True)
        else:  # Django's query-logging wrapper (DEBUG = True), which takes no prepare=
            cursor.execute(UPSERT, values)


def sku(record: Mapping[str, Any]) -> str:
    """A record's key."""
    return str(record["sku"])


def declare(storage: str = "") -> Pipeline:
    """Declare W11's pipeline in this process, importing the files of the bench's ``storage``
    (an alias of this bench run's, when it imports one); answers it."""
    return pipeline(
        NAME,
        steps=[discontinued, price_in_eur],
        drop_reasons=Reason,
        sources={"rates": RATES},
        key=sku,
        columns=list(files.COLUMNS),
        sink=write,
        batch_size=PAGE,
        # Room for any W11F feed in one call: the bench measures the feed, not the overflow.
        buffer=Buffer(capacity=10_000_000),
        files=Files(prefix="", storage=storage) if storage else None,
    )


@contextmanager
def declared(storage: str = "") -> Iterator[Pipeline]:
    """W11's pipeline, declared while the block runs."""
    try:
        yield declare(storage)
    finally:
        pipelines.unregister(NAME)
