"""A claimed job's road as it runs: the modules its runner's thread passes from the claim to the
settling are the ones the architecture page names, in the numbers it states, and none of them
is the worker's main loop (nothing on the road calls back up into ``Worker``)."""

import re
import threading

import pytest

from litejobs.worker.runner import Runner
from tests.conftest import ROOT
from tests.testapp.jobs import record

pytestmark = pytest.mark.django_db(transaction=True)

ARCHITECTURE = ROOT / "docs" / "explanation" / "architecture.md"
MAIN_LOOP = "litejobs.worker.process"


def road() -> str:
    """The page's section on a claimed job's road."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    return text.split("\n## A claimed job's road\n", 1)[1].split("\n## ", 1)[0]


def stated(section: str, what: str) -> int:
    """The number the section states in bold: ``**7 stations**``."""
    found = re.search(rf"\*\*(\d+) {what}\*\*", section)
    assert found, f"the road's section states no **N {what}**"
    return int(found.group(1))


def module(path: str) -> str:
    """``worker/runner`` as a module name: ``litejobs.worker.runner``."""
    return "litejobs." + path.replace("/", ".")


def stations(section: str) -> list[set[str]]:
    """The modules of each row of the stations' table (its last column)."""
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]
    return [set(map(module, re.findall(r"`([\w/]+)`", row.rsplit("|", 2)[1]))) for row in rows]


def named_modules(section: str) -> set[str]:
    """The modules of the paragraph that states how many the road passes."""
    paragraph = section[section.index("modules**") :].split("\n\n", 1)[0]
    return set(map(module, re.findall(r"`([\w/]+)`", paragraph)))


def runner_modules(run) -> set[str]:
    """Every litejobs module whose code ``run()`` calls on a runner's thread (inside
    ``Runner.run``)."""
    passed: set[str] = set()
    running: set[int] = set()  # the threads inside Runner.run

    def profile(frame, event, arg):
        thread = threading.get_ident()
        if frame.f_code is Runner.run.__code__ and event in ("call", "return"):
            (running.add if event == "call" else running.discard)(thread)
        if event == "call" and thread in running:
            name = frame.f_globals.get("__name__", "")
            if name.startswith("litejobs"):
                passed.add(name)

    threading.setprofile(profile)
    try:
        run()
    finally:
        threading.setprofile(None)
    return passed


def test_a_claimed_job_passes_the_stations_and_modules_the_architecture_page_names(
    clock, run_worker
):
    # Enqueued before the worker listens: its runner, not the main loop, claims it.
    record.enqueue(label="road")
    counts = {}
    passed = runner_modules(lambda: counts.update(run_worker(concurrency=1)))
    assert counts == {"done": 1}
    assert MAIN_LOOP not in passed, "a runner's thread called back up into the worker's loop"
    section = road()
    named = named_modules(section)
    assert sorted(passed - named) == [], "passed, but not named on the page"
    assert sorted(named - passed) == [], "named on the page, but not passed"
    assert stated(section, "modules") == len(named)
    table = stations(section)
    assert stated(section, "stations") == len(table)
    assert set().union(*table) <= named
