"""W12's report: a CSV export of a tenant's sales, over an unmanaged model of the bench's sales
table, run by the worker to the bench's file-system storage.

The model belongs to an app label no project installs (``litejobs_bench``), so migrations,
checks and the admin never list it; importing this module defines it (once Django is set up).
The report is declared only where it runs, as W11's pipeline is: in the bench's worker
processes for their life (``declare()``), and in the bench process while W12 runs
(``declared()``). Each of the bench's users reads the tenant named after it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.core.files.storage import Storage
from django.db import models

from ..conf import settings as litejobs_settings
from ..reports import Audit, Limits, Need, Paging, Report, report, storage
from ..reports.declarations import reports
from . import sales

NAME = "litejobs.bench.sales"
#: Rows per page: each page is one query and one part of the output. Measured at 500, 2,000,
#: 5,000 and 10,000: smaller pages pay a page's fixed cost (about 4 ms of the worker's CPU)
#: too often; 10,000 exports within a few percent of 5,000 with a worker 7 MB larger.
PAGE_SIZE = 5000
#: Bytes read at a time when the bench counts an output's lines.
READ_CHUNK = 1 << 20


class Sale(models.Model):
    """A row of the bench's sales table (created and filled by ``sales.fill``)."""

    id = models.BigIntegerField(primary_key=True)
    tenant = models.TextField()
    number = models.TextField()
    customer = models.TextField()
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    status = models.TextField()
    note = models.TextField()
    placed = models.DateField()
    paid_at = models.DateTimeField(null=True)

    class Meta:
        app_label = "litejobs_bench"
        managed = False
        db_table = sales.TABLE

    def __str__(self) -> str:
        return self.number


def tenant_sales(params: dict[str, Any], tenant: str) -> models.QuerySet[Sale]:
    """The report's query: the tenant's sales."""
    return Sale._default_manager.filter(tenant=tenant)


def user_tenant(user: Any) -> str:
    """A bench user reads the tenant it is named after."""
    return str(user.get_username())


def declare() -> Report:
    """Declare W12's report in this process; answers it."""
    return report(
        NAME,
        columns=sales.COLUMNS,
        query=tenant_sales,
        tenant=user_tenant,
        # Bounds no bench size reaches: W12 measures the export, not its stops.
        limits=Limits(max_rows=10**10, max_seconds="1d", max_bytes="1TB", max_concurrent=1),
        # Every export runs in the worker: the request reads two rows and queues the run.
        request_budget=1,
        paging=Paging.pages(size=PAGE_SIZE),
        audit=Audit(reason="the litejobs bench (W12)", target=sales.TABLE),
        need=Need(
            volume=1_000_000,
            latency_target="1m",
            max_result=10**10,
            operator="the litejobs bench",
        ),
    )


@contextmanager
def declared() -> Iterator[Report]:
    """W12's report, declared while the block runs."""
    try:
        yield declare()
    finally:
        reports.unregister(NAME)


def reader(alias: str, tenant: str) -> Any:
    """The bench's user named after ``tenant`` in the database ``alias`` (created once, with no
    usable password): who requests W12's exports. A user model that needs more than a username
    refuses it (``DatabaseError``)."""
    user_model = get_user_model()
    manager = user_model._default_manager.db_manager(alias)
    found = manager.filter(**{user_model.USERNAME_FIELD: tenant}).first()
    if found is not None:
        return found
    user = user_model(**{user_model.USERNAME_FIELD: tenant})
    user.set_unusable_password()
    user.save(using=alias)
    return user


@contextmanager
def reporting_to(alias: str) -> Iterator[None]:
    """Reports requested in the block write their outputs to the storage ``alias``
    (``LITEJOBS['REPORT_STORAGE']`` of this process); the project's setting is back after."""
    configured = getattr(django_settings, "LITEJOBS", None)
    django_settings.LITEJOBS = {**(configured or {}), "REPORT_STORAGE": alias}
    litejobs_settings.forget()
    try:
        yield
    finally:
        django_settings.LITEJOBS = configured
        litejobs_settings.forget()


def output_lines(files: Storage, base: str) -> int:
    """How many lines the output in ``base`` holds, its parts read in order."""
    count = 0
    for name in storage.parts_of(files, base):
        with files.open(name, "rb") as part:
            count += lines(part)
    return count


def lines(file: IO[bytes]) -> int:
    """How many lines a file holds (read a chunk at a time)."""
    return sum(chunk.count(b"\n") for chunk in iter(lambda: file.read(READ_CHUNK), b""))
