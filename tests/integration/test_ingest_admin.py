"""Ingest pipelines in the admin and the metrics: the overview, a pipeline's page (its
drops chart, its alert, its imports), the records set aside and their replay, file imports
and their error report, and who may see and do what."""

from __future__ import annotations

import re

import pytest
from django.contrib.messages import get_messages
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.urls import reverse

from litejobs import Buffer, Files, Freshness
from litejobs.core.enums import ImportState
from litejobs.metrics.collector import registry as metrics_registry
from litejobs.models import (
    BufferedRecord,
    ImportRefusal,
    ImportRun,
    IngestCount,
    OperatorAction,
    OverflowEvent,
    SetAsideRecord,
)
from tests.factories import UserFactory
from tests.testapp import pipelines
from tests.testapp.pipelines import Reason

pytestmark = pytest.mark.django_db

OVERVIEW = reverse("admin:litejobs_ingestcount_changelist")
SET_ASIDE = reverse("admin:litejobs_setasiderecord_changelist")
IMPORTS = reverse("admin:litejobs_importrun_changelist")
START_IMPORT = reverse("admin:litejobs_importrun_add")
OVERFLOWS = reverse("admin:litejobs_overflowevent_changelist")
#: A value only a record's payload holds: a viewer's page must never show it.
SECRET = "card-4111111111111111"


def page_of(name: str) -> str:
    return reverse("admin:litejobs_ingestcount_pipeline", kwargs={"name": name})


def texts(response) -> list[str]:
    return [
        f"[{m.extra_tags}] {m}" if m.extra_tags else str(m)
        for m in get_messages(response.wsgi_request)
    ]


def record(sku, price="10", **fields):
    return {
        "sku": sku,
        "name": f"Product {sku}",
        "price": price,
        "currency": "EUR",
        "status": "active",
        **fields,
    }


@pytest.fixture(autouse=True)
def _forget_calls():
    pipelines.calls.clear()
    pipelines.attempts.clear()


def set_aside(clock, *, reason="discontinued", payload=None, **fields):
    outcome = "errored" if reason == "" else "dropped"
    return SetAsideRecord.objects.create(
        pipeline=fields.pop("pipeline", "tests.catalog"),
        key=fields.pop("key", "A"),
        outcome=outcome,
        reason=reason,
        step="parse",
        error=fields.pop("error", ""),
        attempts=1,
        payload=payload or record("A", note=SECRET),
        set_aside_at=clock.now(),
        **fields,
    )


def viewer(*permissions):
    return UserFactory(permissions=["litejobs.view_ingestcount", *permissions])


# The overview and a pipeline's page --------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_pipelines_page_charts_its_drops_per_reason_per_hour(admin_client, clock, run_worker):
    catalog = pipelines.catalog
    catalog.feed(
        [
            record("A"),
            record("B", status="discontinued"),
            record("C", status="discontinued"),
            record("D", "0.5"),
        ]
    )
    run_worker(queues=["ingest"])
    clock.advance("2h")
    catalog.feed([record("E", status="discontinued")])
    run_worker(queues=["ingest"])

    page = admin_client.get(page_of("tests.catalog"))
    assert page.status_code == 200
    html = page.content.decode()
    start = html.index("<svg viewBox")
    svg = html[start : html.index("</svg>", start)]
    assert 'role="img"' in svg and '<title id="ingest-drops-title">Records of tests.catalog' in svg
    bars = re.findall(r'<rect class="bar" data-series="([^"]+)"[^>]*><title>([^<]+)</title>', svg)
    assert sorted(bars) == [
        ("below_threshold", "01 Mar 12:00: 1 below_threshold"),
        ("discontinued", "01 Mar 12:00: 2 discontinued"),
        ("discontinued", "01 Mar 14:00: 1 discontinued"),
    ]
    heights = {t: float(h) for h, t in re.findall(r'height="([\d.]+)"[^>]*><title>([^<]+)', svg)}
    assert heights["01 Mar 12:00: 2 discontinued"] == 2 * heights["01 Mar 14:00: 1 discontinued"]
    legend = re.findall(r'<li data-series="([^"]+)">.*?</svg> [^:]+: (\d+)</li>', html)
    assert legend == [
        ("discontinued", "3"),
        ("below_threshold", "1"),
        ("poison", "0"),
        ("overflow", "0"),
    ]
    steps = re.findall(r'<li data-kind="(\w+)"><strong>\w+</strong> <code>([^<]+)</code>', html)
    assert steps == [("drop", "parse"), ("enrich", "price_in_eur"), ("drop", "below_threshold")]

    # 48 hours: twice the columns, the same bars.
    longer = admin_client.get(page_of("tests.catalog"), {"hours": 48}).content.decode()
    assert len(re.findall(r'<rect class="bar"', longer)) == 3
    assert "<strong>last 48 hours</strong>" in longer

    overview = admin_client.get(OVERVIEW).content.decode()
    row = re.search(r'<tr data-pipeline="tests.catalog">(.*?)</tr>', overview, re.S).group(1)
    cells = [
        re.sub(r"<[^>]+>", "", c).strip()
        for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)
    ]
    assert cells[:6] == [
        "tests.catalog",
        "bounded: at most 15m old",
        "0 / 1000 (block)",
        "1",
        "4",
        "0",
    ]


def test_a_page_overflow_within_the_hour_or_a_buffer_over_capacity_raises_the_alert(
    admin_client, clock, declare_pipeline
):
    paging = declare_pipeline("tests.paging", buffer=Buffer(capacity=2, overflow="page"))
    quiet = declare_pipeline("tests.quiet", buffer=Buffer(capacity=2, overflow="page"))
    paging.feed([record("A"), record("B"), record("C")])
    quiet.feed([record("A")])

    html = admin_client.get(page_of("tests.paging")).content.decode()
    assert 'id="ingest-alert"' in html
    assert "overflowed 0s ago and paged" in html and "over capacity: 3 / 2 records" in html
    assert 'id="ingest-alert"' not in admin_client.get(page_of("tests.quiet")).content.decode()
    assert (
        '<tr data-pipeline="tests.paging" class="ingest-alert">'
        in admin_client.get(OVERVIEW).content.decode()
    )

    def alert():
        html = admin_client.get(page_of("tests.paging")).content.decode()
        if 'id="ingest-alert"' not in html:
            return None
        return re.sub(r"<[^>]+>", "", html.split('id="ingest-alert"')[1].split("</ul>")[0])

    # Drained, but paged within the hour (a later overflow of another kind changes nothing).
    BufferedRecord.objects.filter(pipeline="tests.paging").delete()
    clock.advance("59m")
    OverflowEvent.objects.create(
        pipeline="tests.paging", overflow="block", at=clock.now(), capacity=2, buffered=2, fed=1
    )
    assert "overflowed 59m ago and paged" in alert() and "over capacity" not in alert()

    clock.advance("2m")  # the page is older than an hour
    assert alert() is None

    BufferedRecord.objects.bulk_create(
        BufferedRecord(pipeline="tests.paging", key=k, payload={}, fed_at=clock.now())
        for k in "ABC"
    )  # over capacity without a page
    assert "over capacity: 3 / 2 records" in alert() and "paged" not in alert()


def test_a_bounded_pipeline_is_stale_once_its_oldest_buffered_record_outwaits_the_bound(
    admin_client, clock, declare_pipeline
):
    bounded = declare_pipeline("tests.bounded", freshness=Freshness.bounded("15m"))
    assert "(STALE)" not in admin_client.get(page_of("tests.bounded")).content.decode()
    bounded.feed([record("A")])
    clock.advance("15m")
    assert "(STALE)" not in admin_client.get(page_of("tests.bounded")).content.decode()
    clock.advance("1s")
    assert (
        "bounded: at most 15m old (STALE)"
        in admin_client.get(page_of("tests.bounded")).content.decode()
    )
    advisory = declare_pipeline("tests.copy", freshness=Freshness.advisory(authority="vendor"))
    advisory.feed([record("A")])
    clock.advance("30d")
    assert (
        "advisory: vendor is the authority"
        in admin_client.get(page_of("tests.copy")).content.decode()
    )


def test_an_unknown_pipeline_is_not_found_and_the_pages_need_the_view_permission(client, clock):
    staff = UserFactory()
    client.force_login(staff)
    assert client.get(OVERVIEW).status_code == 403
    assert client.get(page_of("tests.catalog")).status_code == 403
    client.force_login(viewer())
    assert client.get(OVERVIEW).status_code == 200
    assert client.get(page_of("tests.catalog")).status_code == 200
    assert client.get(page_of("tests.nothing")).status_code == 404


# Replay ------------------------------------------------------------------------------------


def test_the_pipeline_page_replays_a_reason_for_users_who_may_change_set_aside_records(
    client, clock
):
    set_aside(clock, key="A")
    set_aside(clock, key="B")
    set_aside(clock, key="C", reason="below_threshold")
    client.force_login(viewer())
    page = client.get(page_of("tests.catalog")).content.decode()
    assert 'name="replay"' not in page
    assert client.post(page_of("tests.catalog"), {"replay": "discontinued"}).status_code == 403
    assert not BufferedRecord.objects.exists()

    operator = viewer("litejobs.change_setasiderecord")
    client.force_login(operator)
    page = client.get(page_of("tests.catalog")).content.decode()
    row = re.search(r'<tr data-reason="discontinued">(.*?)</tr>', page, re.S).group(1)
    assert 'value="discontinued"' in row and ">2<" in row  # two waiting for a replay
    # The button asks to confirm, showing what it feeds back, and why.
    confirm = client.post(page_of("tests.catalog"), {"replay": "discontinued"})
    html = confirm.content.decode()
    assert confirm.status_code == 200 and 'id="replay-form"' in html
    assert re.findall(r"<tr><td>([^<]+)</td><td>([^<]+)</td><td class=\"count\">(\d+)", html) == [
        ("tests.catalog", "discontinued", "2")
    ]
    assert 'name="reason"' in html and 'name="replay" value="discontinued"' in html
    unexplained = client.post(page_of("tests.catalog"), {"replay": "discontinued", "apply": "1"})
    assert (
        unexplained.status_code == 200 and "This field is required" in unexplained.content.decode()
    )
    assert not BufferedRecord.objects.exists() and not OperatorAction.objects.exists()

    done = client.post(
        page_of("tests.catalog"),
        {"replay": "discontinued", "apply": "1", "reason": "prices fixed in the vendor feed"},
        follow=True,
    )
    assert done.redirect_chain[-1][0] == page_of("tests.catalog")
    assert texts(done) == [
        "Pipeline 'tests.catalog': 2 records dropped as 'discontinued' were fed back into its "
        "buffer; its drain takes them through the steps again."
    ]
    assert sorted(BufferedRecord.objects.values_list("key", flat=True)) == ["A", "B"]
    logged = OperatorAction.objects.get()
    assert (logged.verb, logged.by, logged.user_id, logged.affected) == (
        "ingest-replay",
        operator.username,
        operator.pk,
        2,
    )
    assert logged.reason == "prices fixed in the vendor feed"
    assert logged.filter == {"pipeline": "tests.catalog", "reason": "discontinued"}
    refused = client.post(page_of("tests.catalog"), {"replay": "bogus"}, follow=True)
    assert "[ingest-reason-unknown]" in texts(refused)[0]
    assert OperatorAction.objects.count() == 1


def test_set_aside_records_show_values_only_to_users_who_may_replay(client, clock):
    kept = set_aside(clock, key="sku-secret-key")
    client.force_login(UserFactory(permissions=["litejobs.view_setasiderecord"]))
    listing = client.get(SET_ASIDE)
    assert listing.status_code == 200
    assert "sku-secret-key" not in listing.content.decode()
    assert "replay_reasons" not in listing.content.decode()
    detail = client.get(reverse("admin:litejobs_setasiderecord_change", args=[kept.pk]))
    html = detail.content.decode()
    assert SECRET not in html and "sku-secret-key" not in html
    assert "fields currency, name, note, price, sku, status (values hidden" in html

    client.force_login(UserFactory(permissions=["litejobs.change_setasiderecord"]))
    html = client.get(reverse("admin:litejobs_setasiderecord_change", args=[kept.pk])).content
    assert SECRET in html.decode() and "sku-secret-key" in html.decode()
    assert "sku-secret-key" in client.get(SET_ASIDE).content.decode()


def test_set_aside_records_filter_by_pipeline_outcome_and_reason(admin_client, clock):
    dropped = set_aside(clock, key="A")
    other = set_aside(clock, key="B", reason="below_threshold")
    errored = set_aside(clock, key="C", reason="", error="[ingest-source-undeclared] ...")

    def listed(**query):
        response = admin_client.get(SET_ASIDE, query)
        return {r.pk for r in response.context["cl"].result_list}

    assert listed(pipeline="tests.catalog") == {dropped.pk, other.pk, errored.pk}
    assert listed(reason="below_threshold") == {other.pk}
    assert listed(outcome="errored") == {errored.pk}
    assert listed(pipeline="tests.other") == set()
    reasons = admin_client.get(SET_ASIDE, {"pipeline": "tests.catalog"}).content.decode()
    assert "?pipeline=tests.catalog&amp;reason=poison" in reasons


def test_the_replay_action_confirms_then_replays_the_selected_records_reasons(client, clock):
    first = set_aside(clock, key="A")
    set_aside(clock, key="B")
    errored = set_aside(clock, key="C", reason="")
    set_aside(clock, key="D", reason="below_threshold")  # not selected: stays set aside
    selected = {"action": "replay_reasons", "_selected_action": [str(first.pk), str(errored.pk)]}
    client.force_login(UserFactory(permissions=["litejobs.view_setasiderecord"]))
    client.post(SET_ASIDE, {**selected, "apply": "1"})
    assert not BufferedRecord.objects.exists()

    client.force_login(UserFactory(permissions=["litejobs.change_setasiderecord"]))
    confirm = client.post(SET_ASIDE, selected)
    html = confirm.content.decode()
    assert re.findall(r"<tr><td>([^<]+)</td><td>([^<]+)</td><td class=\"count\">(\d+)", html) == [
        ("tests.catalog", "discontinued", "2"),
        ("tests.catalog", "errored", "1"),
    ]
    assert not BufferedRecord.objects.exists()
    assert 'name="reason"' in html
    client.post(SET_ASIDE, {**selected, "apply": "1"})  # without a reason: asked again
    assert not BufferedRecord.objects.exists()
    done = client.post(SET_ASIDE, {**selected, "apply": "1", "reason": "fixed"}, follow=True)
    assert len(texts(done)) == 2
    assert sorted(BufferedRecord.objects.values_list("key", flat=True)) == ["A", "B", "C"]
    assert SetAsideRecord.objects.filter(replayed_at__isnull=True).get().key == "D"
    logged = OperatorAction.objects.order_by("id").values_list("verb", "affected", "reason")
    assert list(logged) == [("ingest-replay", 2, "fixed"), ("ingest-replay", 1, "fixed")]


# File imports ------------------------------------------------------------------------------


def test_an_imports_error_report_shows_where_and_why_and_its_progress(admin_client, clock):
    run = ImportRun.objects.create(
        pipeline="tests.catalog",
        file="feeds/catalog.csv",
        format="csv",
        state=ImportState.RUNNING,
        offset=250,
        size=1000,
        line=12,
        created_at=clock.now(),
    )
    for line in range(2, 2 + 105):
        ImportRefusal.objects.create(
            run=run, line=line, offset=line * 10, field="price", code="ingest-field-invalid"
        )
    ImportRefusal.objects.create(run=run, line=500, offset=5000, field="", code="ingest-row-long")
    page = admin_client.get(reverse("admin:litejobs_importrun_change", args=[run.pk]))
    html = page.content.decode()
    assert "25% (250 / 1000 bytes)" in html
    assert "ingest-field-invalid: 105, ingest-row-long: 1" in html
    assert html.count('<td class="field-code">') == 100  # the first rows, by offset
    cells = re.findall(r'<td class="field-(line|offset|field|code)">\s*<p>([^<]*)</p>', html)
    assert cells[:4] == [
        ("line", "2"),
        ("offset", "20"),
        ("field", "price"),
        ("code", "ingest-field-invalid"),
    ]
    assert ("code", "ingest-row-long") not in cells  # past the first 100 by offset
    assert "Error report: refused rows (the first 100)" in html

    pipeline_page = admin_client.get(page_of("tests.catalog")).content.decode()
    assert f'<tr data-import="{run.pk}">' in pipeline_page
    assert '<progress max="100" value="25">' in pipeline_page


@pytest.mark.django_db(transaction=True)
def test_a_file_imported_from_the_admin_reports_its_refused_rows_by_code_never_by_value(
    admin_client, clock, run_worker, settings, tmp_path
):
    settings.MEDIA_ROOT = str(tmp_path)
    header = "sku,name,price,currency,status"
    rows = ["A,Fine,10,EUR,active", f"B,Too,many,fields,here,{SECRET}", "C,Fine,10,EUR,active"]
    name = default_storage.save("feeds/bad.csv", ContentFile("\n".join([header, *rows])))
    form = {"pipeline": "tests.catalog", "file": name, "format": "csv", "reason": "monthly"}
    started = admin_client.post(START_IMPORT, form, follow=True)
    run = ImportRun.objects.get()
    assert started.redirect_chain[-1][0] == reverse(
        "admin:litejobs_importrun_change", args=[run.pk]
    )
    assert texts(started) == [
        f"Import {run.pk} of {name!r} through 'tests.catalog' is started: a worker of the ingest "
        "queue reads it; this page shows its progress and error report."
    ]
    run_worker(queues=["ingest"])

    html = admin_client.get(
        reverse("admin:litejobs_importrun_change", args=[run.pk])
    ).content.decode()
    cells = re.findall(r'<td class="field-(line|code)">\s*<p>([^<]*)</p>', html)
    assert cells == [("line", "3"), ("code", "field-count")]
    assert "field-count: 1" in html and "100%" in html
    assert SECRET not in html
    page = admin_client.get(page_of("tests.catalog")).content.decode()
    assert f'<tr data-import="{run.pk}">' in page and '<progress max="100" value="100">' in page
    assert SECRET not in page

    other = default_storage.save("feeds/other.csv", ContentFile("sku,title\nA,x\n"))
    refused = admin_client.post(START_IMPORT, {**form, "file": other})
    assert refused.status_code == 200
    [error] = refused.context["form"].non_field_errors().as_data()
    assert error.code == "ingest-header-mismatch" and "[" not in error.message
    assert ImportRun.objects.count() == 1


def test_starting_an_import_needs_the_add_permission(client, clock):
    client.force_login(UserFactory(permissions=["litejobs.view_importrun"]))
    assert client.get(START_IMPORT).status_code == 403
    assert (
        client.post(
            START_IMPORT,
            {"pipeline": "tests.catalog", "file": "x.csv", "format": "csv", "reason": "why"},
        ).status_code
        == 403
    )
    assert not ImportRun.objects.exists()
    client.force_login(
        UserFactory(permissions=["litejobs.view_importrun", "litejobs.add_importrun"])
    )
    form = client.get(START_IMPORT, {"pipeline": "tests.catalog"})
    assert form.status_code == 200
    assert '<option value="tests.catalog" selected>' in form.content.decode()


def test_the_import_form_offers_only_pipelines_that_declare_their_files(
    admin_client, declare_pipeline
):
    declare_pipeline("tests.no_files", columns=["sku"])
    declare_pipeline("tests.no_columns", files=Files(prefix="feeds/"))
    html = admin_client.get(START_IMPORT).content.decode()
    options = re.findall(r'<option value="([^"]+)"[^>]*>([^<]+)</option>', html)
    assert ("tests.catalog", "tests.catalog (default:feeds/)") in options
    assert not {"tests.no_files", "tests.no_columns"} & {value for value, _ in options}
    assert 'name="storage"' not in html  # the pipeline's own, not a choice
    assert "default:feeds/" in admin_client.get(page_of("tests.catalog")).content.decode()


@pytest.mark.django_db(transaction=True)
def test_an_import_started_in_the_admin_is_kept_in_the_operator_action_log(
    client, clock, settings, tmp_path
):
    settings.MEDIA_ROOT = str(tmp_path)
    name = default_storage.save("feeds/ok.csv", ContentFile("sku,name,price,currency,status\n"))
    operator = UserFactory(permissions=["litejobs.view_importrun", "litejobs.add_importrun"])
    client.force_login(operator)
    form = {"pipeline": "tests.catalog", "file": name, "format": "csv"}
    unexplained = client.post(START_IMPORT, form)
    assert unexplained.status_code == 200 and not ImportRun.objects.exists()
    client.post(START_IMPORT, {**form, "reason": "the vendor's June file"})
    run = ImportRun.objects.get()
    logged = OperatorAction.objects.get()
    assert (logged.verb, logged.by, logged.user_id, logged.reason) == (
        "import-start",
        operator.username,
        operator.pk,
        "the vendor's June file",
    )
    assert logged.filter == {
        "pipeline": "tests.catalog",
        "file": name,
        "format": "csv",
        "import": run.pk,
    }


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("feeds", "ingest-file-missing"),  # a folder: a 500 once
        ("feeds/zero.csv", "ingest-file-missing"),  # a link to /dev/zero: spun for ever once
        ("feeds/environ.csv", "ingest-file-missing"),  # a link to /proc/self/environ
        ("../settings.py", "ingest-file-name-invalid"),
        ("/etc/passwd", "ingest-file-name-invalid"),
    ],
)
def test_the_import_form_refuses_every_file_but_the_pipelines_with_a_code(
    admin_client, settings, tmp_path, name, code
):
    settings.MEDIA_ROOT = str(tmp_path)
    (tmp_path / "feeds").mkdir()
    (tmp_path / "feeds" / "zero.csv").symlink_to("/dev/zero")
    (tmp_path / "feeds" / "environ.csv").symlink_to("/proc/self/environ")
    form = {"pipeline": "tests.catalog", "file": name, "format": "csv", "reason": "why"}
    refused = admin_client.post(START_IMPORT, form)
    assert refused.status_code == 200
    [error] = refused.context["form"].non_field_errors().as_data()
    assert error.code == code
    assert str(tmp_path) not in error.message and "DATABASE" not in error.message
    assert not ImportRun.objects.exists() and not OperatorAction.objects.exists()


def test_a_set_aside_records_sensitive_fields_are_never_shown(client, clock, declare_pipeline):
    declare_pipeline(
        "tests.cards",
        columns=["sku", "name", "price", "currency", "status", "card"],
        key=lambda r: r["card"],
        sensitive=["card"],
    )
    card = "4111111111111111"
    kept = set_aside(
        clock,
        pipeline="tests.cards",
        key=card,
        reason="",
        error=f"[ingest-record-invalid] step saw {card}",
        payload=record("A", card=card),
    )
    gone = set_aside(clock, pipeline="tests.gone", key="K-1", payload=record("B", note=SECRET))
    client.force_login(UserFactory(permissions=["litejobs.change_setasiderecord"]))
    for pk in (kept.pk, gone.pk):
        html = client.get(reverse("admin:litejobs_setasiderecord_change", args=[pk])).content
        assert card not in html.decode() and SECRET not in html.decode()
    html = client.get(reverse("admin:litejobs_setasiderecord_change", args=[kept.pk])).content
    assert "[redacted]" in html.decode() and "Product A" in html.decode()
    listing = client.get(SET_ASIDE).content.decode()
    assert card not in listing and "K-1" not in listing
    assert "hidden: its pipeline is no longer declared" in listing


def test_overflow_events_are_listed_read_only(client, clock, declare_pipeline):
    lossy = declare_pipeline(
        "tests.lossy", buffer=Buffer(capacity=1, overflow="drop_oldest", reason=Reason.OVERFLOW)
    )
    lossy.feed([record("A"), record("B")])
    client.force_login(UserFactory(permissions=["litejobs.view_overflowevent"]))
    listing = client.get(OVERFLOWS, {"pipeline": "tests.lossy"})
    [event] = listing.context["cl"].result_list
    assert (event.overflow, event.dropped) == ("drop_oldest", 1)
    assert (
        client.get(reverse("admin:litejobs_overflowevent_change", args=[event.pk])).status_code
        == 200
    )
    assert (
        'name="_save"'
        not in client.get(
            reverse("admin:litejobs_overflowevent_change", args=[event.pk])
        ).content.decode()
    )


# Metrics -----------------------------------------------------------------------------------


def test_metrics_count_each_declared_pipelines_records_buffer_and_overflows(
    clock, declare_pipeline
):
    paging = declare_pipeline(
        "tests.metered",
        buffer=Buffer(capacity=2, overflow="page"),
        freshness=Freshness.bounded("1m"),
    )
    paging.feed([record("A"), record("B"), record("C")])
    hour = clock.now().replace(minute=0)
    IngestCount.objects.bulk_create(
        [
            IngestCount(
                pipeline="tests.metered", hour=hour, outcome="accepted", reason="", count=7
            ),
            IngestCount(
                pipeline="tests.metered",
                hour=hour,
                outcome="dropped",
                reason="discontinued",
                count=3,
            ),
            IngestCount(
                pipeline="tests.undeclared", hour=hour, outcome="accepted", reason="", count=1
            ),
            IngestCount(
                pipeline="tests.metered", hour=hour, outcome="dropped", reason="renamed", count=1
            ),
        ]
    )
    clock.advance("90s")
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in metrics_registry().collect()
        for s in family.samples
    }

    def of(name, **labels):
        return samples[(name, tuple(sorted({"pipeline": "tests.metered", **labels}.items())))]

    records = "litejobs_ingest_records_total"
    assert of(records, outcome="accepted", reason="") == 7
    assert of(records, outcome="dropped", reason="discontinued") == 3
    assert of(records, outcome="dropped", reason="poison") == 0
    assert of(records, outcome="errored", reason="") == 0
    assert of("litejobs_ingest_buffered") == 3
    assert of("litejobs_ingest_buffer_capacity") == 2
    assert of("litejobs_ingest_oldest_buffered_age_seconds") == 90
    assert of("litejobs_ingest_stale") == 1
    assert of("litejobs_ingest_overflow_events_total", overflow="page") == 1
    assert of("litejobs_ingest_overflow_events_total", overflow="block") == 0
    # Only declare_pipeline pipelines and their declare_pipeline reasons become labels.
    labelled = {dict(labels).get("pipeline") for _, labels in samples if labels}
    assert "tests.undeclared" not in labelled
    assert not [k for k in samples if ("reason", "renamed") in k[1]]
