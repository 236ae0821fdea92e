"""The demo's vendor catalog: ``fixtures/vendor_catalog.csv`` through ``catalog.vendor``
(drop duplicates, enrich prices, drop below the threshold) into ``Product``, every drop
counted by its reason, the bad rows refused by line; seeded once, shown in the admin and
imported again through litejobs' import form.

The fixture holds 308 records: 260 products (14 of them under one euro after conversion), 36
rows repeating one of them exactly, 6 changing one's price, 3 that make a step raise (a
currency the rates lack, twice; a price that is no number) and 3 the reader refuses (too many
fields, too few, a row over the pipeline's 2,048 bytes). One product's name holds a quoted
comma and newline, another quoted quotes.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.core.files.storage import default_storage
from django.urls import reverse

from litejobs.models import ImportRun, SetAsideRecord
from project.catalog.models import Product
from project.catalog.pipelines import (
    catalog,
    drop_below_threshold,
    drop_duplicates,
    enrich_prices,
)
from project.catalog.seed import FILE_NAME, FIXTURE, seed_catalog
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

FIRST_IMPORT = {
    "accepted": 252,  # 246 products written, 6 of them written again at a new price
    "dropped": {"duplicate": 36, "below_threshold": 14, "poison": 3},
    "errored": 0,
}
#: Where the reader refused rows, and why (never their values).
REFUSED = [(78, "field-count"), (153, "field-count"), (224, "record-too-large")]


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)


def imported(run_worker, run_id: int) -> ImportRun:
    run_worker(queues=["ingest"])
    return ImportRun.objects.get(pk=run_id)


def test_the_fixture_imports_with_every_drop_counted_by_its_reason(run_worker, clock):
    assert catalog.steps == (drop_duplicates, enrich_prices, drop_below_threshold)
    report = seed_catalog()
    assert report.copied and report.file == FILE_NAME

    run = imported(run_worker, report.import_run)
    assert (run.state, run.accepted, run.dropped, run.errored, run.refused) == (
        "done",
        252,
        53,
        0,
        3,
    )
    assert list(run.refusals.values_list("line", "code")) == REFUSED
    assert catalog.stats() == FIRST_IMPORT

    # Each drop was decided by the step that names its reason, in the steps' order.
    steps = dict(SetAsideRecord.objects.values_list("reason", "step").distinct())
    assert steps == {
        "duplicate": drop_duplicates.name,
        "below_threshold": drop_below_threshold.name,
        "poison": enrich_prices.name,
    }
    assert set(SetAsideRecord.objects.filter(reason="poison").values_list("key", "attempts")) == {
        ("VC-20001", 3),
        ("VC-20002", 3),
        ("VC-20003", 3),
    }

    assert Product.objects.count() == 246
    lamp = Product.objects.get(sku="VC-10041")  # a quoted comma and newline, priced in SEK
    assert lamp.name == "Desk lamp, brass\nwith dimmer"
    assert (lamp.price, lamp.currency, lamp.price_eur) == (Decimal("79.09"), "SEK", Decimal("6.96"))
    assert Product.objects.get(sku="VC-10042").name == 'Notebook "Field" edition'
    assert Product.objects.get(sku="VC-10002").price_eur == Decimal("227.43")  # 247.21 USD
    assert not Product.objects.filter(price_eur__lt=1).exists()
    # A row changing a stored product's price is no duplicate: the later price is kept.
    changed = SetAsideRecord.objects.filter(reason="duplicate").values_list("key", flat=True)
    assert Product.objects.get(sku="VC-10023").price == Decimal("10.09")  # was 9.17
    assert "VC-10023" not in changed


def test_seeding_copies_and_imports_once_and_an_import_again_finds_the_duplicates(
    run_worker, clock
):
    first = seed_catalog()
    again = seed_catalog()
    assert (again.copied, again.import_run) == (False, None)
    assert ImportRun.objects.count() == 1
    imported(run_worker, first.import_run)

    # The same file again: every row identical to its stored product is now a duplicate; the
    # six products whose price the file changes are written back and forth once more.
    run = imported(run_worker, catalog.import_file(FILE_NAME).pk)
    assert (run.state, run.accepted, run.refused) == ("done", 12, 3)
    assert catalog.stats()["dropped"] == {"duplicate": 36 + 276, "below_threshold": 28, "poison": 6}
    assert Product.objects.count() == 246


def test_a_changed_fixture_is_copied_again(tmp_path, clock):
    seed_catalog()
    changed = tmp_path / "vendor_catalog.csv"
    changed.write_bytes(FIXTURE.read_bytes().replace(b"VC-10001,", b"VC-19999,", 1))
    assert seed_catalog(changed).copied
    with default_storage.open(FILE_NAME, "rb") as stored:
        assert stored.read() == changed.read_bytes()


def test_the_admin_shows_the_drops_by_reason_and_imports_the_file_again(client, run_worker, clock):
    first = imported(run_worker, seed_catalog().import_run)
    products = reverse("admin:catalog_product_changelist")
    pipeline_page = reverse("admin:litejobs_ingestcount_pipeline", kwargs={"name": catalog.name})
    import_form = reverse("admin:litejobs_importrun_add")

    viewer = UserFactory(permissions=["catalog.view_product", "litejobs.view_ingestcount"])
    client.force_login(viewer)
    page = client.get(products).content.decode()
    assert '<td class="drop-duplicate">36</td>' in page
    assert '<td class="drop-below_threshold">14</td>' in page
    assert '<td class="drop-poison">3</td>' in page
    assert '<td class="drop-overflow">0</td>' in page
    assert pipeline_page in page and import_form not in page  # no import without the right
    drops = client.get(pipeline_page).content.decode()
    for reason, count in FIRST_IMPORT["dropped"].items():
        assert re.search(
            rf'data-reason="{reason}">\s*<th[^>]*>{reason}</th>\s*<td class="count">{count}<', drops
        )

    # The import's report: each refused row by line and code, never its values.
    client.force_login(UserFactory(permissions=["litejobs.view_importrun"]))
    report = client.get(
        reverse("admin:litejobs_importrun_change", args=[first.pk])
    ).content.decode()
    assert "field-count: 2, record-too-large: 1" in report
    assert "Bolts, M6" not in report and "Very long description" not in report

    importer = UserFactory(permissions=["catalog.view_product", "litejobs.add_importrun"])
    client.force_login(importer)
    assert import_form in client.get(products).content.decode()
    form = {"pipeline": catalog.name, "file": FILE_NAME, "format": "csv", "reason": "demo"}
    assert client.post(import_form, form).status_code == 302
    again = ImportRun.objects.latest("id")
    assert (again.pipeline, again.file, again.state) == ("catalog.vendor", FILE_NAME, "running")
    assert imported(run_worker, again.pk).accepted == 12
