"""The docs' reference is complete and current, and the README stays a newcomer's first page.

Everything here scans the whole package (``litejobs/``), not particular modules, so it keeps
holding while modules move: a setting, error code, check id or CLI verb added anywhere must be
in the reference pages before the suite passes.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from functools import cache
from pathlib import Path

import pytest

from litejobs.conf import DEFAULTS
from tests.conftest import ROOT

DOCS = ROOT / "docs"
REFERENCE = DOCS / "reference"
README = ROOT / "README.md"

#: ``code="x"`` / ``code = "x"`` (error codes), and codes that open a message: ``"[x] ..."``.
CODE_ASSIGNED = re.compile(r"""\bcode\s*=\s*["']([a-z][a-z0-9]*(?:-[a-z0-9]+)+)["']""")
CODE_PREFIX = re.compile(r"""["']\[([a-z][a-z0-9]*(?:-[a-z0-9]+)+)\] """)
CHECK_ID = re.compile(r"\blitejobs\.[EW]\d+\b")
#: Repository paths a page names (``tests/test_x.py``, ``project/asgi.py``), globs included.
REPOSITORY_PATH = re.compile(r"`((?:tests|project|fixtures)/[\w./*-]+)`")
#: litejobs' modules as pages name them: ``litejobs/worker/runner.py``, ``worker/runner``, ``core/``
#: (a path inside the package), ``litejobs.worker.runner``, ``litejobs.conf.settings`` (dotted).
PACKAGE_PATH = re.compile(r"`(?:litejobs/)?((?:[a-z_]+/)+[\w.]*)`")
DOTTED_PATH = re.compile(r"`(litejobs(?:\.\w+)+)`")
#: Dotted names a page shows that are no import path: attributes of a span.
NOT_IMPORTED = {"litejobs.job.attempt"}
#: Files the repository does not ship; no page or README may send a reader to them.
ABSENT_FILES = ("SPEC.md", "BENCH.md", "STYLE.md")


@cache
def generator():
    """scripts/docs_reference.py, loaded by path (scripts/ is no package)."""
    spec = importlib.util.spec_from_file_location(
        "docs_reference", ROOT / "scripts" / "docs_reference.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses resolve their annotations through it
    spec.loader.exec_module(module)
    return module


def package_sources() -> list[Path]:
    return sorted((ROOT / "litejobs").rglob("*.py"))


def found_in_package(pattern: re.Pattern[str]) -> set[str]:
    return {
        match.group(1) if pattern.groups else match.group(0)
        for path in package_sources()
        for match in pattern.finditer(path.read_text(encoding="utf-8"))
    }


def page(name: str) -> str:
    return (REFERENCE / name).read_text(encoding="utf-8")


def docs_pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def missing(names: set[str], text: str) -> list[str]:
    """The names that ``text`` does not show as code (`` `name` ``)."""
    return sorted(name for name in names if f"`{name}`" not in text)


def test_every_setting_is_in_the_settings_reference():
    assert missing(set(DEFAULTS), page("settings.md")) == []


def test_every_error_code_is_in_the_errors_reference():
    codes = found_in_package(CODE_ASSIGNED) | found_in_package(CODE_PREFIX)
    assert len(codes) > 50, "the scan found too few codes: did the pattern break?"
    assert missing(codes, page("errors.md")) == []


def test_every_check_id_is_in_the_checks_reference():
    ids = found_in_package(CHECK_ID)
    assert {"litejobs.E001", "litejobs.W040"} <= ids
    assert missing(ids, page("checks.md")) == []


def test_every_cli_verb_is_in_the_cli_reference():
    verbs = set(generator().litejobs_verbs())
    assert {"list", "retry", "doctor", "schedule show", "bench"} <= verbs
    text = page("cli.md")
    assert sorted(verb for verb in verbs if f"### `{verb}`" not in text) == []
    for runtime in generator().RUNTIMES:
        assert f"### `{runtime}`" in text


def test_generated_reference_matches_the_code():
    stale = [str(path.relative_to(ROOT)) for path in generator().stale_pages()]
    assert stale == [], f"stale reference pages {stale}: run `make docs-reference` and commit"


def test_the_settings_generator_reads_each_comment():
    """A key takes the comment above it; one without shares the previous key's; a comment that
    goes on from the previous one carries that series' heading."""
    source = (
        "DEFAULTS = {\n"
        "    # The first: one line,\n"
        '    "A": 1,\n'
        "    # and the second.\n"
        '    "B": "2s",\n'
        '    "C": [],\n'
        '    "D": {"x": "1d"},  # An inline one.\n'
        "}\n"
    )
    settings = generator().settings_of(source)
    assert [(s.name, s.default, s.meaning) for s in settings] == [
        ("A", "1", "The first: one line."),
        ("B", '"2s"', "The first: the second."),
        ("C", "[]", "The first: the second."),
        ("D", '{"x": "1d"}', "An inline one."),
    ]


def test_the_readme_is_a_short_first_page():
    text = README.read_text(encoding="utf-8")
    head = "\n".join(text.splitlines()[:40])
    assert "make demo" in head and "make test" in head
    assert len(text.encode()) < 20_000
    assert "psycopg[binary]" in text
    for step in ("INSTALLED_APPS", "LOGGING", "migrate", "runworker", "runscheduler"):
        assert step in text


def test_readme_links_reach_files_in_the_repository():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link]
    assert any(link.startswith("docs/") for link in local)
    assert [link for link in local if not (ROOT / link).exists()] == []


@pytest.mark.parametrize("path", [README, ROOT / "CHANGELOG.md", *docs_pages()], ids=str)
def test_no_page_names_files_the_repository_does_not_ship(path):
    text = path.read_text(encoding="utf-8")
    assert [name for name in ABSENT_FILES if name in text] == []
    assert not re.search(r"\bSPEC\b|§", text), "state the rule itself, not where it came from"
    named = REPOSITORY_PATH.findall(text)
    assert [name for name in named if not list(ROOT.glob(name))] == []


def test_every_runbook_doctor_names_is_a_section_of_the_runbooks_page():
    """``doctor --json`` sends each problem to a section of docs/operating/runbooks.md: each
    anchor is a heading's, as the docs' table of contents makes them."""
    from markdown.extensions.toc import slugify

    from litejobs.doctor import runbooks

    page = (DOCS / "operating" / "runbooks.md").read_text()
    anchors = {
        slugify(line.lstrip("#").strip().replace("`", ""), "-")
        for line in page.splitlines()
        if line.startswith("## ")
    }
    assert {code: anchor for code, anchor in runbooks().items() if anchor not in anchors} == {}


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module of litejobs, or a name one defines."""
    module, _, name = dotted.rpartition(".")
    try:
        importlib.import_module(dotted)
    except ImportError:
        try:
            return hasattr(importlib.import_module(module), name)
        except ImportError:
            return False
    return True


def in_package(path: str) -> bool:
    """Whether ``worker/runner`` (``core/``, ``sql/jobs.sql``) is a module, package or file of
    litejobs; a path that starts elsewhere (``admin/litejobs/…`` templates) is no claim."""
    top = ROOT / "litejobs" / path.partition("/")[0]
    if not (top / "__init__.py").exists():
        return True
    found = ROOT / "litejobs" / path.rstrip("/")
    return found.exists() or found.with_suffix(".py").exists()


def test_every_module_the_architecture_page_names_exists():
    text = (DOCS / "explanation" / "architecture.md").read_text(encoding="utf-8")
    paths = PACKAGE_PATH.findall(text)
    assert {"worker/settling", "jobs/catalog", "core/"} <= set(paths), "did the pattern break?"
    dotted = DOTTED_PATH.findall(text)
    assert "litejobs.conf.settings" in dotted
    assert [path for path in paths if not in_package(path)] == []
    assert [name for name in dotted if not resolves(name)] == []


@pytest.mark.parametrize("path", [README, *docs_pages()], ids=str)
def test_every_dotted_litejobs_path_a_page_names_resolves(path):
    """``litejobs.x.y``: a module, or a name in one. (``litejobs.x`` alone is as often a job,
    a check id or a permission as a module, so it is left to the pages' own tests.)"""
    named = {name for name in DOTTED_PATH.findall(path.read_text()) if name.count(".") > 1}
    assert sorted(name for name in named - NOT_IMPORTED if not resolves(name)) == []
