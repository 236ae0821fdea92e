"""W11's vendor catalog: its records, and its CSV written to the bench's temporary folder, which
a storage alias of the bench's own serves to the bench process and its workers (a file import
reads Django storage), so the bench writes nothing to the project's storages.

Every record has the same five text fields; one in ``DISCONTINUED_EVERY`` is discontinued
(W11's drop step drops it) and prices come in three currencies (its enrich step converts them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

#: The catalog's columns, the CSV's header.
COLUMNS = ("sku", "name", "price", "currency", "status")
CURRENCIES = ("EUR", "USD", "GBP")
#: One record in this many is discontinued.
DISCONTINUED_EVERY = 100
#: The CSV's name in the bench's storage.
FILE_NAME = "catalog.csv"
#: Rows written per ``write()`` of the CSV.
WRITE_ROWS = 50_000


def record(n: int) -> dict[str, str]:
    """The catalog's ``n``-th record."""
    return {
        "sku": f"SKU{n:08d}",
        "name": f"Product {n}",
        "price": f"{1 + (n * 7919) % 50_000 / 100:.2f}",
        "currency": CURRENCIES[n % len(CURRENCIES)],
        "status": "discontinued" if n % DISCONTINUED_EVERY == 0 else "active",
    }


def records(count: int) -> list[dict[str, str]]:
    """The catalog's first ``count`` records."""
    return [record(n) for n in range(count)]


def discontinued(count: int) -> int:
    """How many of the first ``count`` records are discontinued."""
    return (count - 1) // DISCONTINUED_EVERY + 1


def write_catalog(folder: Path, count: int) -> Path:
    """Write the catalog's first ``count`` records as ``FILE_NAME`` in ``folder``, with its
    header; answers the file's path."""
    path = folder / FILE_NAME
    with path.open("w", encoding="utf-8", newline="") as file:
        file.write(",".join(COLUMNS) + "\n")
        for start in range(0, count, WRITE_ROWS):
            rows = (record(n) for n in range(start, min(start + WRITE_ROWS, count)))
            file.write("".join(",".join(row.values()) + "\n" for row in rows))
    return path


def use_storage(alias: str, location: str) -> None:
    """Serve ``location`` as the file-system storage ``alias`` in this process (the alias is
    unique to one bench run, so no storage built for another run answers it)."""
    from django.core.files.storage import storages

    backends = cast(dict[str, Any], storages.backends)
    backends[alias] = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": location},
    }
