"""The ingest how-to's example runs as written: its pipeline declared from the page's first
block, fed and importing files through its second, landing through its upsert sink."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connection

from litejobs.ingest.declarations import pipelines as registry
from tests.conftest import ROOT

pytestmark = pytest.mark.django_db(transaction=True)

HOWTO = ROOT / "docs" / "how-to" / "ingest.md"
HEADER = "sku,name,price,currency,status"


def blocks() -> list[str]:
    """The page's Python blocks, in order."""
    return re.findall(r"```python\n(.*?)```", HOWTO.read_text(encoding="utf-8"), re.S)


@pytest.fixture
def shop(settings, tmp_path):
    """The example's table, and the files its second block imports."""
    settings.MEDIA_ROOT = str(tmp_path)
    default_storage.save(
        "feeds/catalog/2026-06.csv",
        ContentFile(
            "\n".join(
                [
                    HEADER,
                    "A-1,Nut,1.50,EUR,active",
                    "A-2,Washer,0.10,GBP,active",  # below the threshold
                    "A-3,Old screw,3.00,EUR,discontinued",
                    "A-4,Bad\0name,1.00,EUR,active",  # no text PostgreSQL keeps
                ]
            )
        ),
    )
    default_storage.save(
        "feeds/catalog/changes.ndjson",
        ContentFile(
            '{"sku": "A-5", "name": "Nut, M6", "price": "2", "currency": "GBP", '
            '"status": "active"}\n'
        ),
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE shop_product (sku text UNIQUE NOT NULL, name text NOT NULL, "
            "price_eur numeric(12, 2) NOT NULL)"
        )
    yield
    registry.unregister("shop.catalog")
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE shop_product")


def products() -> dict[str, tuple[str, Decimal]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT sku, name, price_eur FROM shop_product ORDER BY sku")
        return {sku: (name, price) for sku, name, price in cursor.fetchall()}


def test_the_howto_example_runs_as_written(shop, run_worker):
    declaration, usage = blocks()[:2]
    module = {"__name__": "shop.pipelines"}
    exec(compile(declaration, str(HOWTO), "exec"), module)  # noqa: S102 - the page's code
    exec(compile(usage, str(HOWTO), "exec"), dict(module))  # noqa: S102
    run_worker(queues=["ingest"])
    assert products() == {
        "A-1": ("Nut", Decimal("1.50")),  # the CSV's
        "A-5": ("Nut, M6", Decimal("2.34")),  # the NDJSON's
        "B-7": ("Bolt", Decimal("2.21")),  # fed
    }
    catalog = module["catalog"]
    assert catalog.stats()["dropped"] == {"discontinued": 1, "below_threshold": 1}
    assert catalog.files.prefix == "feeds/catalog/"
