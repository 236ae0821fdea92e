"""The vendor catalog's demo data: ``fixtures/vendor_catalog.csv`` copied into the demo's media
storage, where an import names it, and imported once through ``catalog.vendor``.

Called by ``project.demo.seed.seed_demo_data`` inside its transaction; idempotent: the file is
copied again only when the fixture changed, and imported only when the pipeline has never
imported anything, so a restarted demo keeps its counts. The worker ``make demo`` starts runs
the import, so the drops by reason are in the admin at first start.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from litejobs.models import ImportRun
from project.database import BASE_DIR

from .pipelines import catalog

FIXTURE = BASE_DIR / "fixtures" / "vendor_catalog.csv"
#: The vendor's file in the demo's media storage: the name an import of it takes.
FILE_NAME = "feeds/vendor_catalog.csv"


@dataclass
class CatalogSeed:
    """What seeding the catalog changed."""

    file: str = FILE_NAME
    copied: bool = False
    #: The import started by this seeding, if one was.
    import_run: int | None = None


def seed_catalog(fixture: Path = FIXTURE) -> CatalogSeed:
    """Copy the vendor's file into the media storage, and import it unless the pipeline has
    imported a file before."""
    report = CatalogSeed(copied=copy_fixture(fixture))
    if not ImportRun.objects.filter(pipeline=catalog.name).exists():
        report.import_run = catalog.import_file(FILE_NAME).pk
    return report


def copy_fixture(fixture: Path = FIXTURE) -> bool:
    """Put the fixture at ``FILE_NAME`` in the default storage unless it is there already;
    answers whether it was copied."""
    data = fixture.read_bytes()
    if default_storage.exists(FILE_NAME):
        with default_storage.open(FILE_NAME, "rb") as stored:
            if stored.read() == data:
                return False
        default_storage.delete(FILE_NAME)
    default_storage.save(FILE_NAME, ContentFile(data))
    return True
