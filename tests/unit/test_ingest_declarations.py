"""Declaring ingest pipelines: each rule a declaration breaks is refused with its code, and
``manage.py check`` reports it with a stable id."""

from __future__ import annotations

import enum

import pytest
from django.test import override_settings

from litejobs import Buffer, Freshness, drop, enrich, pipeline
from litejobs.exceptions import DeclarationError, LitejobsError
from litejobs.ingest import Files, SourceUndeclared
from litejobs.ingest import declarations as registry
from litejobs.ingest.checks import check_pipelines
from litejobs.ingest.declarations import Sources


class Reason(enum.Enum):
    DISCONTINUED = "discontinued"
    POISON = "poison"
    OVERFLOW = "overflow"


class Other(enum.Enum):
    ELSEWHERE = "elsewhere"


@drop(reasons={Reason.DISCONTINUED})
def parse(record):
    return None


@enrich(sources={"rates"})
def price(record, sources):
    return record


def unmarked(record):
    return record


@drop(reasons={Other.ELSEWHERE})
def foreign(record):
    return None


@enrich(sources={"stock"})
def stocked(record, sources):
    return record


class NoPoison(enum.Enum):
    DISCONTINUED = "discontinued"


class Empty(enum.Enum):
    pass


def declare(**options):
    options = {
        "steps": [parse, price],
        "drop_reasons": Reason,
        "sources": {"rates": {}},
        "key": lambda r: r["sku"],
        "sink": print,
        **options,
    }
    try:
        return pipeline("tests.declared", **options)
    finally:
        registry.pipelines.unregister("tests.declared")


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({"drop_reasons": None}, "pipeline-reasons-missing"),
        ({"drop_reasons": Empty}, "pipeline-reasons-missing"),
        ({"drop_reasons": NoPoison}, "pipeline-reasons-missing"),
        ({"steps": [parse, unmarked]}, "pipeline-step-unmarked"),
        ({"steps": [foreign]}, "pipeline-reason-outside-set"),
        ({"steps": [stocked]}, "pipeline-source-undeclared"),
        (
            {"buffer": Buffer(overflow="drop_oldest", reason=Other.ELSEWHERE)},
            "pipeline-reason-outside-set",
        ),
        ({"batch_size": 0}, "pipeline-invalid"),
        ({"columns": ["sku", "sku"]}, "pipeline-invalid"),
        ({"steps": parse}, "pipeline-invalid"),
        ({"sink": "save"}, "pipeline-invalid"),
        # A list where a mapping goes, a text where a list goes: refused, never read oddly.
        ({"sources": [{"rates": {}}]}, "pipeline-invalid"),
        ({"columns": "sku"}, "pipeline-invalid"),
        ({"sensitive": "card"}, "pipeline-invalid"),
        ({"columns": ["sku", "card"], "sensitive": ["cvc"]}, "pipeline-invalid"),
        ({"files": "feeds/"}, "pipeline-invalid"),
        ({"flavour": "vanilla"}, "option-unknown"),
        ({"batchsize": 10}, "option-unknown"),
    ],
)
def test_each_broken_rule_is_refused_with_its_code(options, code):
    with pytest.raises(DeclarationError) as refused:
        declare(**options)
    assert refused.value.code == code
    assert "tests.declared" in str(refused.value)


def test_an_unknown_option_is_named_with_the_option_it_likely_means():
    with pytest.raises(DeclarationError, match="unknown option 'batchsize'; did you mean "):
        declare(batchsize=10)
    with pytest.raises(DeclarationError) as refused:
        declare(flavour="vanilla")
    message = str(refused.value)
    assert "unknown option 'flavour'; pipeline() takes steps, drop_reasons, " in message
    assert "files, sensitive." in message


@pytest.mark.parametrize("name", ["bad name/../x", "", " shop", "shop/catalog", "x" * 101, 7])
def test_a_name_that_cannot_name_jobs_and_pages_is_refused(name):
    with pytest.raises(DeclarationError) as refused:
        pipeline(name, steps=[parse], drop_reasons=Reason, key=str, sink=print)
    assert refused.value.code == "pipeline-invalid"
    assert "1-100 letters, digits or '_.-'" in str(refused.value)
    assert registry.pipelines.get(str(name)) is None


def test_a_name_declared_twice_in_one_module_is_refused():
    first = pipeline("tests.twice", steps=[parse], drop_reasons=Reason, key=str, sink=print)
    try:
        with pytest.raises(DeclarationError) as refused:
            pipeline("tests.twice", steps=[], drop_reasons=Reason, key=str, sink=print)
        assert refused.value.code == "pipeline-duplicate"
        assert f"twice in {__name__}" in str(refused.value)
        assert registry.pipelines["tests.twice"] is first
    finally:
        registry.pipelines.unregister("tests.twice")


def test_a_module_imported_again_after_a_failed_import_declares_anew():
    """Its first run's declarations are replaced, not refused as duplicates."""
    source = "pipeline('tests.again', steps=[parse], drop_reasons=Reason, key=str, sink=print)"
    names = {"__name__": "shop.pipelines", "pipeline": pipeline, "parse": parse, "Reason": Reason}
    try:
        exec(source, dict(names))  # noqa: S102 - a module's first run
        exec(source, dict(names))  # noqa: S102 - its second run, in a new namespace
        assert registry.pipelines["tests.again"].module == "shop.pipelines"
    finally:
        registry.pipelines.unregister("tests.again")


def test_files_say_a_folder_of_a_storage():
    assert Files(prefix="feeds/catalog").prefix == "feeds/catalog/"
    assert Files(prefix="", storage="vendor").prefix == ""
    assert str(Files(prefix="feeds/")) == "default:feeds/"
    for prefix in ("../feeds", "/srv/feeds", "feeds/../../etc", "feeds//x", 7, None):
        with pytest.raises(DeclarationError) as refused:
            Files(prefix=prefix)
        assert refused.value.code == "pipeline-invalid"
    with pytest.raises(DeclarationError):
        Files(prefix="feeds/", storage="")


@pytest.mark.parametrize(
    ("make", "code"),
    [
        (lambda: Buffer(capacity=0), "pipeline-invalid"),
        (lambda: Buffer(overflow="spill"), "pipeline-invalid"),
        (lambda: Buffer(overflow="drop_oldest"), "pipeline-reason-outside-set"),
        (lambda: drop(reasons=set()), "pipeline-invalid"),
        (lambda: drop(reasons={"discontinued"}), "pipeline-invalid"),
        (lambda: enrich(sources="rates"), "pipeline-invalid"),
        (lambda: Freshness.advisory(authority=""), "pipeline-invalid"),
        (lambda: Freshness.bounded(0), "duration-invalid"),
        (lambda: Freshness.bounded("0s"), "duration-invalid"),
    ],
)
def test_broken_parts_are_refused_where_they_are_made(make, code):
    with pytest.raises(LitejobsError) as refused:
        make()
    assert refused.value.code == code


def test_steps_keep_their_order_and_stay_callable():
    declared = declare(steps=[price, parse])
    assert [step.name for step in declared.steps] == ["price", "parse"]
    assert parse({"sku": "A"}) is None  # a marked step is still the function


def test_an_enrich_step_sees_only_its_declared_sources():
    sources = Sources(price, {"rates": {"EUR": 1}, "stock": {"A": 3}})
    assert dict(sources) == {"rates": {"EUR": 1}}
    with pytest.raises(SourceUndeclared) as undeclared:
        sources["stock"]
    assert undeclared.value.code == "ingest-source-undeclared"
    assert "price" in str(undeclared.value) and "'stock'" in str(undeclared.value)


def test_a_broken_pipelines_module_is_a_check_error_not_a_crash():
    with override_settings(INSTALLED_APPS=["litejobs", "tests.badpipelines"]):
        registry.autodiscover()
        [error] = check_pipelines()
    registry.autodiscover()  # back to the real apps
    assert error.id == "litejobs.E071"
    assert "tests.badpipelines.pipelines" in error.msg and "unmarked" in error.msg
    assert check_pipelines() == []


def test_an_ingest_queue_that_is_no_queue_name_is_a_check_error(settings):
    from litejobs.ingest.checks import check_ingest_settings

    settings.LITEJOBS = {"INGEST_QUEUE": "no spaces allowed"}
    [error] = check_ingest_settings()
    assert error.id == "litejobs.E075" and "INGEST_QUEUE" in error.msg
    settings.LITEJOBS = {}
    assert check_ingest_settings() == []


def test_a_registry_answers_none_for_an_undeclared_name_on_every_python():
    assert registry.pipelines.get("tests.nowhere") is None
    with pytest.raises(Exception) as missing:
        registry.pipelines["tests.nowhere"]
    assert missing.value.code == "pipeline-unknown"


@pytest.mark.parametrize("retention", [10**12, "100000d", {"days": 1}])
def test_an_ingest_retention_no_date_can_reach_back_is_a_check_error(settings, clock, retention):
    """10**12 seconds once passed the check, then the daily purge raised OverflowError."""
    from litejobs.checks import check_settings
    from litejobs.ingest import retention as purging

    settings.LITEJOBS = {"INGEST_RETENTION": retention}
    [error] = [e for e in check_settings() if "INGEST_RETENTION" in e.msg]
    assert error.id == "litejobs.E004" and "[settings-invalid]" in error.msg
    with pytest.raises(LitejobsError) as refused:
        purging.purge(now=clock.now())
    assert refused.value.code == "duration-invalid"


def test_every_duration_setting_is_bounded_by_one_ceiling(settings):
    from litejobs.conf import settings as litejobs_settings
    from litejobs.core.durations import LONGEST

    settings.LITEJOBS = {"LEASE": LONGEST, "RETENTION": {"done": "36526d"}}
    assert litejobs_settings.duration("LEASE") == LONGEST
    with pytest.raises(LitejobsError, match=r"LITEJOBS\['RETENTION'\]\['done'\] must be a fin"):
        litejobs_settings.retention("done")


def test_files_from_a_storage_storages_does_not_define_are_a_check_error(settings):
    from litejobs.ingest.checks import check_pipeline_files

    declared = declare(columns=["sku"], files=Files(prefix="feeds/", storage="vendor"))
    registry.pipelines.register(declared.name, declared)
    try:
        [error] = check_pipeline_files()
        assert error.id == "litejobs.E076" and "'vendor'" in error.msg
        settings.STORAGES = {**settings.STORAGES, "vendor": settings.STORAGES["default"]}
        assert check_pipeline_files() == []
    finally:
        registry.pipelines.unregister(declared.name)
