"""File imports through an ingest pipeline: CSV and NDJSON from Django storage, a page per
transaction, refused rows reported without their values."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from litejobs import Files, enrich, pipeline
from litejobs.ingest import ImportRefused
from litejobs.ingest.declarations import pipelines as registry
from litejobs.ingest.reader import HEADER_BYTES
from litejobs.models import ImportRefusal, ImportRun, Job, SetAsideRecord
from tests.testapp import pipelines
from tests.testapp.models import Product

pytestmark = pytest.mark.django_db(transaction=True)

HEADER = "sku,name,price,currency,status"


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    pipelines.calls.clear()
    pipelines.attempts.clear()


@pytest.fixture
def small_pages(monkeypatch):
    """tests.catalog with pages of two rows, so records meet page edges."""
    declared = replace(registry["tests.catalog"], batch_size=2)
    monkeypatch.setitem(registry, "tests.catalog", declared)
    return declared


def save(name, content: bytes | str):
    data = content.encode() if isinstance(content, str) else content
    return default_storage.save(name, ContentFile(data))


def names():
    return dict(Product.objects.values_list("sku", "name"))


def test_a_csv_imports_every_row_across_page_edges_exactly_once(run_worker, small_pages):
    rows = [f'P{n},"Name {n}",10,EUR,active' for n in range(7)]
    name = save("feeds/catalog.csv", "\n".join([HEADER, *rows]) + "\n")
    run = pipelines.catalog.import_file(name)
    run_worker(queues=["ingest"])
    run.refresh_from_db()
    assert (run.state, run.accepted, run.refused) == ("done", 7, 0)
    assert run.offset == run.size == default_storage.size(name)
    assert sorted(names()) == [f"P{n}" for n in range(7)]
    assert set(Product.objects.values_list("writes", flat=True)) == {1}


def test_quoted_newlines_crlf_a_bom_and_another_header_order_are_read(run_worker, small_pages):
    content = (
        "\ufeffname,sku,currency,price,status\r\n"
        '"Two\r\nlines",A,EUR,10,active\r\n'
        '"Say ""hi""",B,USD,10,active\r\n'
        "Plain,C,EUR,10,active"  # no newline at the end
    )
    run = pipelines.catalog.import_file(save("feeds/odd.csv", content.encode("utf-8")))
    run_worker(queues=["ingest"])
    assert names() == {"A": "Two\r\nlines", "B": 'Say "hi"', "C": "Plain"}
    run.refresh_from_db()
    assert (run.state, run.accepted) == ("done", 3)


def test_refused_rows_are_reported_by_line_and_code_never_by_value(run_worker):
    content = "\n".join(
        [HEADER, "A,Fine,10,EUR,active", "B,Too,many,fields,here,SECRET", "C,Fine,10,EUR,active"]
    )
    run = pipelines.catalog.import_file(save("feeds/bad.csv", content))
    run_worker(queues=["ingest"])
    run.refresh_from_db()
    assert (run.accepted, run.refused) == (2, 1)
    [refusal] = ImportRefusal.objects.filter(run=run)
    assert (refusal.line, refusal.code) == (3, "field-count")
    assert refusal.offset == content.index("B,Too")
    assert "SECRET" not in json.dumps(list(ImportRefusal.objects.values()), default=str)


@pytest.mark.parametrize(
    ("file_format", "rows", "refusals"),
    [
        (
            "csv",
            [HEADER, "A,Fine,10,EUR,active", "B,Na\0me,10,EUR,active", "C,Fine,10,EUR,active"],
            [(3, "nul-character", "name")],
        ),
        (
            "ndjson",
            [
                json.dumps(pipelines.record("A")),
                json.dumps(pipelines.record("B", name="Na\0me")),  # written as \u0000
                json.dumps(pipelines.record("C")).replace('"Product C"', '"\\ud800"'),
                json.dumps(pipelines.record("D")).replace('"10"', "1e400"),
                json.dumps(pipelines.record("E")),
            ],
            [
                (2, "nul-character", "name"),
                (3, "value-unstorable", "name"),
                (4, "value-unstorable", ""),
            ],
        ),
    ],
)
def test_a_value_postgresql_cannot_keep_refuses_its_row_and_the_import_reads_on(
    run_worker, small_pages, file_format, rows, refusals
):
    """One such value once aborted its page's transaction on every retry, until the job died
    with the import still running and the good rows of its page lost."""
    name = save(f"feeds/nul.{file_format}", "\n".join(rows) + "\n")
    run = pipelines.catalog.import_file(name, format=file_format)
    run_worker(queues=["ingest"])
    run.refresh_from_db()
    assert (run.state, run.refused, run.errored) == ("done", len(refusals), 0)
    assert run.accepted == len(rows) - len(refusals) - (file_format == "csv")
    found = ImportRefusal.objects.filter(run=run).order_by("offset")
    assert list(found.values_list("line", "code", "field")) == refusals
    assert Job.objects.get(key=f"ingest-import:{run.pk}").state == "done"
    assert not SetAsideRecord.objects.exists()


def test_a_record_over_the_size_limit_is_refused_at_its_offset(run_worker, monkeypatch):
    declared = replace(registry["tests.catalog"], max_record_bytes=64)
    monkeypatch.setitem(registry, "tests.catalog", declared)
    big = "B," + "x" * 500 + ",10,EUR,active"
    content = "\n".join([HEADER, "A,Fine,10,EUR,active", big, "C,Fine,10,EUR,active"])
    run = declared.import_file(save("feeds/big.csv", content))
    run_worker(queues=["ingest"])
    [refusal] = ImportRefusal.objects.filter(run=run)
    assert (refusal.code, refusal.offset, refusal.line) == (
        "record-too-large",
        content.index(big),
        3,
    )
    assert sorted(names()) == ["A", "C"]


def test_a_header_that_does_not_name_the_declared_columns_writes_nothing():
    name = save("feeds/wrong.csv", "sku,DB_PASSWORD=hunter2,price,currency,status\nA,x,10\n")
    with pytest.raises(ImportRefused) as refused:
        pipelines.catalog.import_file(name)
    assert refused.value.code == "ingest-header-mismatch"
    # The declared column it misses, and how many others: never the file's own words.
    assert "misses 'name', has 1 other name" in str(refused.value)
    assert "hunter2" not in str(refused.value) and "DB_PASSWORD" not in str(refused.value)
    assert not ImportRun.objects.exists() and not Job.objects.exists()


def test_a_file_whose_header_changed_before_its_import_ran_is_refused(run_worker):
    name = save("feeds/later.csv", f"{HEADER}\nA,Fine,10,EUR,active\n")
    run = pipelines.catalog.import_file(name)
    default_storage.delete(name)
    save(name, "sku,price\nA,10\n")
    run_worker(queues=["ingest"])
    run.refresh_from_db()
    assert run.state == "refused" and "ingest-header-mismatch" in run.error
    assert not Product.objects.exists()


def test_an_ndjson_file_imports_objects_and_refuses_the_rest(run_worker):
    lines = [
        json.dumps(
            {"sku": "A", "name": "Fine", "price": "10", "currency": "EUR", "status": "active"}
        ),
        "not json",
        json.dumps({"sku": "B", "name": "No status", "price": "10", "currency": "EUR"}),
    ]
    run = pipelines.catalog.import_file(save("feeds/c.ndjson", "\n".join(lines)), format="ndjson")
    run_worker(queues=["ingest"])
    assert names() == {"A": "Fine"}
    codes = list(ImportRefusal.objects.filter(run=run).values_list("line", "code", "field"))
    assert codes == [(2, "json-invalid", ""), (3, "field-missing", "status")]


def test_drops_in_an_import_are_counted_and_set_aside(run_worker):
    content = "\n".join([HEADER, "A,Fine,10,EUR,active", "B,Old,10,EUR,discontinued"])
    run = pipelines.catalog.import_file(save("feeds/drops.csv", content))
    run_worker(queues=["ingest"])
    run.refresh_from_db()
    assert (run.accepted, run.dropped) == (1, 1)
    assert pipelines.catalog.stats()["dropped"] == {"discontinued": 1}


@pytest.mark.parametrize(
    ("name", "options", "code"),
    [
        ("feeds/none.csv", {}, "ingest-file-missing"),
        ("feeds/x.csv", {"format": "xlsx"}, "ingest-format-invalid"),
        ("../feeds/x.csv", {}, "ingest-file-name-invalid"),
        ("feeds/../../etc/passwd", {}, "ingest-file-name-invalid"),
        ("/etc/passwd", {}, "ingest-file-name-invalid"),
        ("feeds//x.csv", {}, "ingest-file-name-invalid"),
        ("feeds/./x.csv", {}, "ingest-file-name-invalid"),
        ("feeds\\x.csv", {}, "ingest-file-name-invalid"),
        ("", {}, "ingest-file-name-invalid"),
        (7, {}, "ingest-file-name-invalid"),
        ("feeds/" + "x" * 500, {}, "ingest-file-name-invalid"),
    ],
)
def test_an_import_that_cannot_start_is_refused_with_a_code(name, options, code, tmp_path):
    with pytest.raises(ImportRefused) as refused:
        pipelines.catalog.import_file(name, **options)
    assert refused.value.code == code
    assert str(tmp_path) not in str(refused.value)  # never the server's paths
    assert not ImportRun.objects.exists()


def refusal_of(name: str, declared=None) -> ImportRefused:
    with pytest.raises(ImportRefused) as refused:
        (declared or pipelines.catalog).import_file(name)
    assert not ImportRun.objects.exists() and not Job.objects.exists()
    return refused.value


def test_only_regular_files_under_the_declared_folder_are_read_all_else_answers_alike(tmp_path):
    """Not there, outside the folder, a folder, a symbolic link (to a file elsewhere, to
    /proc/self/environ, to /dev/zero, or on the way), a FIFO: one code, one message."""
    feeds = tmp_path / "feeds"
    save("feeds/ok.csv", f"{HEADER}\nA,Fine,10,EUR,active\n")
    save("other/secret.csv", f"{HEADER}\nA,DB_PASSWORD=hunter2,10,EUR,active\n")
    (feeds / "folder.csv").mkdir()
    (feeds / "link.csv").symlink_to(tmp_path / "other" / "secret.csv")
    (feeds / "environ.csv").symlink_to("/proc/self/environ")
    (feeds / "zero.csv").symlink_to("/dev/zero")
    (feeds / "via").symlink_to(tmp_path / "other")
    os.mkfifo(feeds / "fifo.csv")
    names = [
        "feeds/none.csv",
        "other/secret.csv",
        "feeds/folder.csv",
        "feeds/link.csv",
        "feeds/environ.csv",
        "feeds/zero.csv",
        "feeds/via/secret.csv",
        "feeds/fifo.csv",
        "feeds",
    ]
    for name in names:
        refused = refusal_of(name)
        assert refused.code == "ingest-file-missing"
        assert str(refused) == str(refusal_of("feeds/none.csv")).replace("feeds/none.csv", name)
        assert "hunter2" not in str(refused) and str(tmp_path) not in str(refused)
    assert "may import no file 'feeds/none.csv': its files are the regular files under " in str(
        refusal_of("feeds/none.csv")
    )
    assert pipelines.catalog.import_file("feeds/ok.csv").size == (feeds / "ok.csv").stat().st_size


def test_a_pipeline_reads_files_only_from_the_storage_it_declares(declare_pipeline, settings):
    undeclared = declare_pipeline("tests.no_files", columns=HEADER.split(","))
    refused = refusal_of("feeds/x.csv", undeclared)
    assert refused.code == "ingest-files-undeclared" and "files=Files(prefix=" in str(refused)
    nowhere = declare_pipeline(
        "tests.nowhere", columns=HEADER.split(","), files=Files(prefix="", storage="nope")
    )
    assert refusal_of("feeds/x.csv", nowhere).code == "ingest-storage-unknown"
    vendor = settings.MEDIA_ROOT + "/vendor"
    os.makedirs(f"{vendor}/drop")
    with open(f"{vendor}/drop/c.csv", "w") as file:
        file.write(f"{HEADER}\nA,Fine,10,EUR,active\n")
    settings.STORAGES = {
        **settings.STORAGES,
        "vendor": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": vendor},
        },
    }
    elsewhere = declare_pipeline(
        "tests.vendor", columns=HEADER.split(","), files=Files(prefix="drop", storage="vendor")
    )
    assert refusal_of("feeds/c.csv", elsewhere).code == "ingest-file-missing"
    assert elsewhere.import_file("drop/c.csv").file == "drop/c.csv"


def test_rows_appended_after_the_import_started_are_not_read(run_worker, small_pages, tmp_path):
    name = save("feeds/growing.csv", f"{HEADER}\nA,Fine,10,EUR,active\nB,Fine,10,EUR,active\n")
    run = pipelines.catalog.import_file(name)
    with open(tmp_path / name, "a") as file:
        file.write("C,Later,10,EUR,active\n")
    run_worker(queues=["ingest"])
    run.refresh_from_db()
    assert (run.state, run.accepted, run.offset) == ("done", 2, run.size)
    assert sorted(names()) == ["A", "B"]


def test_a_file_gone_before_its_import_ran_refuses_the_import(run_worker, tmp_path):
    name = save("feeds/gone.csv", f"{HEADER}\nA,Fine,10,EUR,active\n")
    run = pipelines.catalog.import_file(name)
    (tmp_path / name).unlink()
    (tmp_path / name).symlink_to("/proc/self/environ")
    run_worker(queues=["ingest"])
    run.refresh_from_db()
    assert run.state == "refused" and "[ingest-file-missing]" in run.error
    assert Job.objects.get(key=f"ingest-import:{run.pk}").state == "done"


def test_an_endless_first_line_is_refused_after_a_bounded_read(tmp_path):
    save("feeds/endless.csv", "x" * 1_000_000)
    refused = refusal_of("feeds/endless.csv")
    assert refused.code == "ingest-header-mismatch"
    assert f"does not end within its first {HEADER_BYTES} bytes" in str(refused)


def test_finished_imports_are_purged_with_their_error_reports(clock, run_worker):
    from litejobs.ingest import retention

    content = "\n".join([HEADER, "A,Fine,10,EUR,active", "B,bad"])
    run = pipelines.catalog.import_file(save("feeds/old.csv", content))
    run_worker(queues=["ingest"])
    assert ImportRefusal.objects.filter(run=run).count() == 1
    clock.advance("31d")
    assert retention.purge()["imports"] == 1
    assert not ImportRun.objects.exists() and not ImportRefusal.objects.exists()


def test_doctor_reports_an_import_whose_job_stopped():
    from datetime import timedelta

    from litejobs.doctor import diagnose

    run = pipelines.catalog.import_file(save("feeds/stuck.csv", f"{HEADER}\nA,x,10,EUR,active"))
    Job.objects.filter(key=f"ingest-import:{run.pk}").update(state="dead")
    [stopped] = [
        p
        for p in diagnose(max_ready_age=timedelta(minutes=5)).problems
        if p.code == "ingest-import-stopped"
    ]
    assert f"import {run.pk}" in stopped.message and "dead" in stopped.message


@pytest.fixture
def scribbling():
    """A pipeline whose one step changes the record in place (its name, and a nested value
    when it has one) before it answers it: each attempt sees what it was handed, and the first
    attempt of A and every attempt of B raise after the change."""
    seen = []

    @enrich()
    def scribble(record, sources):
        seen.append(json.loads(json.dumps(record)))
        record["name"] = f"{record['name']}!" if isinstance(record["name"], str) else record["name"]
        if isinstance(record["status"], dict):
            record["status"]["tags"].append("scribbled")
        if record["sku"] == "B" or (record["sku"] == "A" and len(seen) == 1):
            raise RuntimeError("after the change")
        return record

    def save_name(record):
        name = record["name"] if isinstance(record["name"], str) else json.dumps(record["name"])
        Product.objects.create(sku=record["sku"], name=name, price_eur=0)

    declared = pipeline(
        "tests.scribbling",
        steps=[scribble],
        drop_reasons=pipelines.Reason,
        key=lambda record: record["sku"],
        columns=HEADER.split(","),
        sink=save_name,
        files=Files(prefix="feeds/"),
    )
    yield declared, seen
    registry.unregister(declared.name)


@pytest.mark.parametrize(
    ("file_format", "rows"),
    [
        # A CSV row's values are texts: each attempt gets a copy of the row as read.
        ("csv", [HEADER, "A,Name A,10,EUR,active", "B,Name B,10,EUR,active"]),
        # A nested value could change in place: each attempt parses the record afresh.
        (
            "ndjson",
            [
                json.dumps(
                    {"sku": sku, "name": f"Name {sku}", "price": "10", "currency": "EUR"}
                    | {"status": {"tags": ["new"]}}
                )
                for sku in "AB"
            ],
        ),
    ],
)
def test_each_attempt_starts_from_the_row_as_read_whatever_an_attempt_changed(
    run_worker, scribbling, file_format, rows
):
    declared, seen = scribbling
    run = declared.import_file(
        save(f"feeds/scribbled.{file_format}", "\n".join(rows)), format=file_format
    )
    run_worker(queues=["ingest"])
    run.refresh_from_db()
    assert (run.accepted, run.dropped) == (1, 1)

    first = {"A": seen[0]}
    for sku in "AB":
        attempts = [record for record in seen if record["sku"] == sku]
        assert len(attempts) == (2 if sku == "A" else 3)
        assert all(record == attempts[0] for record in attempts), attempts  # none scribbled
        first[sku] = attempts[0]
    assert first["A"]["name"] == "Name A" and "scribbled" not in json.dumps(first)
    # A was written once, with one change (its second attempt's); B was set aside as read.
    assert names() == {"A": "Name A!"}
    aside = SetAsideRecord.objects.get(key="B")
    assert (aside.reason, aside.attempts, aside.payload) == ("poison", 3, first["B"])


def test_an_import_job_enqueued_before_files_were_declared_still_runs():
    """Its arguments named the storage; the pipeline's declared files name it now."""
    from litejobs.ingest.declarations import IMPORT_JOB
    from litejobs.jobs import catalog

    definition = catalog.get(IMPORT_JOB)
    assert definition.upgraded({"run_id": 7, "storage": "default"}, 1) == {"run_id": 7}
