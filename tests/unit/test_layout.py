"""The layout's guarantees: no import cycles between modules (function-local imports included)
nor between packages, imports only downward, the optional packages only where their features
are, and every documented path."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_python

PACKAGE = ROOT / "litejobs"

#: The page that lists every public path; its "Faces" table names each face and what it exports.
PUBLIC_PATHS = ROOT / "docs" / "reference" / "public-paths.md"
#: The modules at the top of the package that hold litejobs' own code; every other one is a face.
OWN_TOP = {"__init__", "apps", "checks", "conf", "doctor", "exceptions", "workflows"}


def documented_faces() -> dict[str, set[str]]:
    """The faces the public paths page lists, each with the names it says the face exports
    (``litejobs.clock.now`` written on the face's row)."""
    table = PUBLIC_PATHS.read_text().split("\n## Faces\n", 1)[1]
    return {
        face: set(re.findall(rf"`{re.escape(face)}\.(\w+)`", exports))
        for face, exports in re.findall(r"^\| `(litejobs\.\w+)` \| (.*?) \|", table, re.M)
    }


#: The paths users write in settings, URLconfs and ASGI applications whose code lives
#: elsewhere: each is a documented face that re-exports it, and nothing else.
FACES = set(documented_faces())
#: The add-ons: features a project may leave unused (some need an extra). The rest of
#: litejobs never imports them; the app wires them in when Django is ready.
ADD_ONS = {"litejobs.workqueues", "litejobs.bulk", "litejobs.metrics", "litejobs.tasks"}
#: The leaves of the public face that every feature reads: they import only the core (and the
#: core imports none of them).
CORE_LEAVES = {"litejobs.conf", "litejobs.exceptions"}
#: The worker's main loop: ``Worker``, which builds a claimed job's road and hands it down.
MAIN_LOOP = "litejobs.worker.process"
#: Where each optional package may be imported (litejobs[live], [otp], [metrics]).
EXTRAS = {
    "channels": {
        "litejobs.live.sockets",
        "litejobs.live.routing",
        "litejobs.workqueues.sockets",
        "litejobs.workqueues.routing",
    },
    "daphne": set(),
    "django_otp": {"litejobs.bulk.devices"},
    "opentelemetry": {"litejobs.core.otel"},
    "prometheus_client": {
        "litejobs.metrics.attempts",
        "litejobs.metrics.collector",
        "litejobs.metrics.views",
    },
}


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources(root: Path = PACKAGE) -> dict[str, Path]:
    """Every module of litejobs (migrations aside: they import nothing of litejobs)."""
    return {
        module_name(path, root): path
        for path in root.rglob("*.py")
        if "migrations" not in path.parts
    }


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Every module ``name`` imports, from every import statement anywhere in the file (inside
    functions too, and under ``if TYPE_CHECKING``). ``from x import y`` names the module
    ``x.y`` when it is one, else ``x``; importing a module does not count as importing the
    packages above it (they are imported first by Python, but do not depend on it)."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                found.add(candidate if candidate in known else target)
    return found - {name}


def graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """litejobs' module graph: module -> the litejobs modules it imports."""
    modules = sources(root)
    known = set(modules)
    return {
        name: {m for m in imports_of(name, path, known) if m in known}
        for name, path in modules.items()
    }


def package_of(module: str, path: Path) -> str:
    """The package ``module`` belongs to: a package's ``__init__`` is the package itself, and
    each module at the top of litejobs (the public face and its leaves, such as ``conf``) is
    one of its own."""
    if path.name == "__init__.py" or module.count(".") == 1:
        return module
    return module.rpartition(".")[0]


def package_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """litejobs' package graph: package -> the other packages its modules import."""
    modules = sources(root)
    edges: dict[str, set[str]] = {}
    for module, imported in graph(root).items():
        package = package_of(module, modules[module])
        edges.setdefault(package, set()).update(
            package_of(other, modules[other]) for other in imported
        )
        edges[package].discard(package)
    return edges


def external_imports(root: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the top-level packages outside litejobs it imports."""
    modules = sources(root)
    return {
        name: {m.partition(".")[0] for m in imports_of(name, path, set(modules))}
        for name, path in modules.items()
    }


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Each cycle of the graph (one per strongly connected component), as a path that ends
    where it starts."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(path_through(edges, set(component)))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def path_through(edges: dict[str, set[str]], component: set[str]) -> list[str]:
    """A cycle inside ``component``: from its first module back to it."""
    start = min(component)
    trail, seen = [start], {start}
    while True:
        step = min(m for m in edges[trail[-1]] if m in component)
        if step in seen:
            return [*trail[trail.index(step) :], step]
        trail.append(step)
        seen.add(step)


def test_no_module_imports_itself_through_others():
    found = cycles(graph())
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in found)


def test_the_cycle_check_finds_a_cycle_of_function_local_imports(tmp_path):
    # The check's own proof: two modules importing each other inside functions is a cycle.
    package = tmp_path / "litejobs"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "one.py").write_text("def f():\n    from . import two\n")
    (package / "two.py").write_text("def g():\n    from .one import f\n")
    assert cycles(graph(package)) == [["litejobs.one", "litejobs.two", "litejobs.one"]]


def test_no_package_imports_itself_through_others():
    found = cycles(package_graph())
    assert not found, "package import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_the_cycle_check_finds_a_cycle_between_packages(tmp_path):
    # The check's own proof: no module imports itself through others, but the package core
    # imports conf, which imports core.
    package = tmp_path / "litejobs"
    (package / "core").mkdir(parents=True)
    for name in ("__init__.py", "core/__init__.py"):
        (package / name).write_text("")
    (package / "core" / "clock.py").write_text("from ..conf import settings\n")
    (package / "core" / "durations.py").write_text("")
    (package / "conf.py").write_text("from .core.durations import parse\n")
    assert cycles(graph(package)) == []
    assert cycles(package_graph(package)) == [["litejobs.conf", "litejobs.core", "litejobs.conf"]]


def add_on_of(module: str) -> str | None:
    return next((a for a in ADD_ONS if module == a or module.startswith(f"{a}.")), None)


def test_only_the_app_the_faces_and_other_add_ons_import_an_add_on():
    offenders = {
        (module, imported)
        for module, imported_all in graph().items()
        for imported in imported_all
        if add_on_of(imported) not in (None, add_on_of(module))
        and add_on_of(module) is None
        and module not in {"litejobs.apps", *FACES}
    }
    assert not offenders


def test_the_core_imports_nothing_above_it():
    edges = graph()
    upward = {
        (module, imported)
        for module in edges
        if module.startswith("litejobs.core")
        for imported in edges[module]
        if not imported.startswith("litejobs.core")
    }
    leaves = {
        (module, imported)
        for module in CORE_LEAVES
        for imported in edges[module]
        if not imported.startswith("litejobs.core")
    }
    assert not upward and not leaves


#: A dotted path under litejobs, as code, a string, a docstring or a comment spells it.
LITEJOBS_PATH = re.compile(r"\blitejobs\.(\w+)")


def core_publishers(root: Path = PACKAGE) -> set[str]:
    """The modules at the top of the package that import nothing but the core: the paths the
    core's own objects are published at (``conf``, ``exceptions``, the ``clock``, ``logging``
    and ``tracing`` faces)."""
    edges = graph(root)
    return {
        module.rpartition(".")[2]
        for module, path in sources(root).items()
        if module.count(".") == 1
        and path.name != "__init__.py"
        and all(imported.startswith("litejobs.core") for imported in edges[module])
    }


def core_naming_features(root: Path = PACKAGE) -> set[tuple[str, str]]:
    """(core module, what it imports or names above the core) for every such pair."""
    edges = graph(root)
    top = {path.name for path in root.iterdir() if (path / "__init__.py").exists()}
    top |= {path.stem for path in root.glob("*.py") if path.stem != "__init__"}
    above = top - {"core"} - core_publishers(root)
    found = set()
    for module, path in sources(root).items():
        if module == "litejobs.core" or module.startswith("litejobs.core."):
            found |= {(module, i) for i in edges[module] if not i.startswith("litejobs.core")}
            found |= {
                (module, f"litejobs.{name}")
                for name in LITEJOBS_PATH.findall(path.read_text())
                if name in above
            }
    return found


def test_the_core_names_no_feature():
    """The core knows no feature. A module of ``litejobs.core`` imports nothing of litejobs
    outside the core, and its text (code, strings, docstrings, comments) spells no
    ``litejobs.<name>`` for a package or module at the top of litejobs other than the core and
    the modules that publish the core (those importing nothing else: ``conf``, ``exceptions``
    and the ``clock``, ``logging`` and ``tracing`` faces). So no feature package (``jobs``,
    ``outbox``, ``webhooks``, ``reports``, ``ingest``, ``scheduling``, ``workqueues``,
    ``bulk``, ``workflows``, …), no layer above the core (``models``, ``sql``, ``runtime``,
    ``admin``, ``cli``, …) and no face of a feature (``urls``, ``views``, ``routing``) is
    reached from the core, by an import or by a dotted string (a URL, logger, salt or setting
    name, an ``import_string``). A feature's rule lives in its feature; a rule the records
    apply lives beside the record."""
    assert not core_naming_features()


def test_the_core_check_finds_an_import_and_a_name(tmp_path):
    # The check's own proof: a core module that imports the outbox, and one that names the
    # reports in a string; naming the published clock is allowed.
    package = tmp_path / "litejobs"
    for folder in ("core", "outbox", "reports"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "clock.py").write_text("from .core.times import now\n")
    (package / "core" / "times.py").write_text('"""See litejobs.clock.now."""\nnow = 1\n')
    (package / "core" / "topics.py").write_text("from ..outbox import stage\n")
    (package / "core" / "links.py").write_text('SALT = "litejobs.reports.download"\n')
    assert core_naming_features(package) == {
        ("litejobs.core.topics", "litejobs.outbox"),
        ("litejobs.core.links", "litejobs.reports"),
    }


#: The parts that serve every feature, each with the features it may still name: they read
#: what each feature contributes from the features litejobs' app loaded
#: (``litejobs.core.features``), so a new feature is added without editing them.
SERVE_EVERY_FEATURE = {
    "litejobs.apps": set(),
    "litejobs.doctor": set(),
    "litejobs.cli": set(),
    "litejobs.metrics.collector": set(),
    "litejobs.admin.problems": set(),
    # litejobs' own schedules run jobs (``@job``, ``JobContext``), one of them the job counters'
    # rollup.
    "litejobs.scheduling.housekeeping": {"litejobs.jobs"},
    # The queue table, the charts and the live workers are the job queue's own panels.
    "litejobs.admin.dashboard": {"litejobs.jobs"},
}


def feature_packages() -> set[str]:
    """Every feature's package: those litejobs' app loads, and the optional ones."""
    from litejobs.apps import FEATURES, OPTIONAL

    return {f"litejobs.{name}" for name in (*FEATURES, *OPTIONAL)}


def features_named(edges: dict[str, set[str]], packages: set[str]) -> set[tuple[str, str]]:
    """(module, feature module) of each part of ``SERVE_EVERY_FEATURE`` importing a feature
    other than its own and those it may name."""

    def feature_of(module: str) -> str | None:
        return next((p for p in packages if module == p or module.startswith(f"{p}.")), None)

    return {
        (module, imported)
        for module, allowed in SERVE_EVERY_FEATURE.items()
        for imported in edges.get(module, ())
        if feature_of(imported) not in {None, feature_of(module), *allowed}
    }


def test_the_parts_that_serve_every_feature_import_none_by_name():
    assert features_named(graph(), feature_packages()) == set()


def test_the_feature_check_finds_a_feature_imported_by_name(tmp_path):
    # The check's own proof: doctor importing ingest's health is found; ingest's own is not.
    package = tmp_path / "litejobs"
    (package / "ingest").mkdir(parents=True)
    for name in ("__init__.py", "ingest/__init__.py", "ingest/health.py"):
        (package / name).write_text("")
    (package / "doctor.py").write_text("from .ingest import health\n")
    (package / "ingest" / "feature.py").write_text("from . import health\n")
    found = features_named(graph(package), {"litejobs.ingest"})
    assert found == {("litejobs.doctor", "litejobs.ingest.health")}


def test_each_feature_plugs_in_from_its_own_package():
    """Each package's ``feature.py`` holds its ``Feature``, named after the package, and the
    modules it names (its verbs, its admin pages) are its own."""
    from litejobs.apps import FEATURES
    from litejobs.core import features

    loaded = {feature.name: feature for feature in features.installed()}
    assert set(FEATURES) <= loaded.keys()
    for name, feature in loaded.items():
        package = f"litejobs.{name}"
        assert importlib.import_module(f"{package}.feature").feature is feature
        for module in filter(None, (feature.verbs, feature.admin)):
            assert module.startswith(f"{package}."), (name, module)
            assert importlib.util.find_spec(module) is not None, module


def test_the_optional_packages_are_imported_only_by_their_features():
    found = {
        (module, package)
        for module, packages in external_imports().items()
        for package in packages & EXTRAS.keys()
        if module not in EXTRAS[package]
    }
    assert not found


def test_every_face_is_a_thin_documented_path_of_objects_that_live_elsewhere():
    for name in FACES:
        tree = ast.parse(sources()[name].read_text())
        docstring = ast.get_docstring(tree) or ""
        assert docstring.startswith("The path"), name
        body = [node for node in tree.body if not isinstance(node, ast.Expr)]
        assert all(isinstance(node, ast.ImportFrom | ast.Assign) for node in body), name


def test_only_the_workers_face_imports_its_main_loop():
    """A claimed job's road (claim, run, settle) is handed its collaborators by the main loop
    and never reaches back up into ``Worker``: no module but ``litejobs.worker`` itself, which
    exports it, imports ``litejobs.worker.process``."""
    importing = {module for module, imported in graph().items() if MAIN_LOOP in imported}
    assert importing == {"litejobs.worker"}


def test_the_top_of_the_package_holds_a_handful_of_modules():
    top = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert set(top) == OWN_TOP | {name.rpartition(".")[2] for name in FACES}


def faces_in_the_package(root: Path = PACKAGE) -> set[str]:
    """The faces that exist: the modules at the top of the package but litejobs' own."""
    return {f"litejobs.{path.stem}" for path in root.glob("*.py") if path.stem not in OWN_TOP}


def test_the_public_paths_page_lists_every_face_and_what_it_exports():
    """Each face is the one documented path of what it exports: the page's "Faces" table lists
    every face there is and no other, and on each face's row exactly the names it exports."""
    documented = documented_faces()
    existing = faces_in_the_package()
    assert not existing - documented.keys(), "faces the page does not list"
    assert not documented.keys() - existing, "faces the page lists that are gone"
    for face, names in documented.items():
        assert set(importlib.import_module(face).__all__) == names, face


# Every documented import and settings path ---------------------------------------------------

#: (the documented path, the object it must be, by its new path).
DOCUMENTED = [
    ("litejobs.tasks.LitejobsBackend", "litejobs.tasks.backend.LitejobsBackend"),
    ("litejobs.outbox.stage", "litejobs.outbox.staging.stage"),
    ("litejobs.outbox.subscriber", "litejobs.outbox.declarations.subscriber"),
    ("litejobs.outbox.topic", "litejobs.outbox.declarations.topic"),
    ("litejobs.outbox.Message", "litejobs.outbox.declarations.Message"),
    ("litejobs.workqueues.work_queue", "litejobs.workqueues.declarations.work_queue"),
    ("litejobs.workqueues.score_rule", "litejobs.workqueues.declarations.score_rule"),
    ("litejobs.workqueues.enqueue_item", "litejobs.workqueues.commands.enqueue_item"),
    ("litejobs.workqueues.claim", "litejobs.workqueues.commands.claim"),
    ("litejobs.workqueues.claim_next", "litejobs.workqueues.commands.claim_next"),
    ("litejobs.workqueues.release", "litejobs.workqueues.commands.release"),
    ("litejobs.workqueues.resolve", "litejobs.workqueues.commands.resolve"),
    ("litejobs.workqueues.refresh_score", "litejobs.workqueues.commands.refresh_score"),
    ("litejobs.workqueues.page", "litejobs.workqueues.listing.page"),
    ("litejobs.workqueues.purge", "litejobs.workqueues.retention.purge"),
    ("litejobs.workqueues.ClaimRefused", "litejobs.workqueues.errors.ClaimRefused"),
    ("litejobs.workqueues.WorkItemNotFound", "litejobs.workqueues.errors.WorkItemNotFound"),
    (
        "litejobs.workqueues.WorkQueueForbidden",
        "litejobs.workqueues.errors.WorkQueueForbidden",
    ),
    (
        "litejobs.workqueues.WorkQueueNotFound",
        "litejobs.workqueues.errors.WorkQueueNotFound",
    ),
    ("litejobs.bulk.bulk_money_action", "litejobs.bulk.declarations.bulk_money_action"),
    ("litejobs.bulk.preview", "litejobs.bulk.preview.preview"),
    ("litejobs.bulk.confirm", "litejobs.bulk.confirmation.confirm"),
    ("litejobs.bulk.retry_item", "litejobs.bulk.execution.retry_item"),
    ("litejobs.bulk.BulkRefused", "litejobs.bulk.errors.BulkRefused"),
    ("litejobs.bulk.BulkSetChanged", "litejobs.bulk.errors.BulkSetChanged"),
    ("litejobs.bulk.BulkActionNotFound", "litejobs.bulk.errors.BulkActionNotFound"),
    ("litejobs.workflows.workflow", "litejobs.workflows.workflow"),
    ("litejobs.workflows.Step", "litejobs.workflows.Step"),
    ("litejobs.workflows.Compensation", "litejobs.workflows.Compensation"),
    ("litejobs.workflows.use_case", "litejobs.workflows.use_case"),
    ("litejobs.routing.websocket_path", "litejobs.workqueues.live.websocket_path"),
    ("litejobs.views.metrics", "litejobs.metrics.views.metrics"),
    ("litejobs.webhooks.verify_signature", "litejobs.webhooks.signing.verify_signature"),
    ("litejobs.webhooks.verify_request", "litejobs.webhooks.signing.verify_request"),
    ("litejobs.webhooks.create_endpoint", "litejobs.webhooks.endpoints.create_endpoint"),
    ("litejobs.webhooks.RETRY_AFTER_MAX", "litejobs.webhooks.transport.RETRY_AFTER_MAX"),
    ("litejobs.clock.now", "litejobs.core.clock.now"),
    ("litejobs.clock.use_clock", "litejobs.core.clock.use_clock"),
    ("litejobs.clock.FrozenClock", "litejobs.core.clock.FrozenClock"),
    ("litejobs.clock.SystemClock", "litejobs.core.clock.SystemClock"),
    ("litejobs.tracing.TraceparentMiddleware", "litejobs.core.tracing.TraceparentMiddleware"),
    ("litejobs.logging.JSONFormatter", "litejobs.core.logs.JSONFormatter"),
    ("litejobs.conf.settings", "litejobs.conf.settings"),
    ("litejobs.exceptions.SignatureInvalid", "litejobs.exceptions.SignatureInvalid"),
    ("litejobs.exceptions.LitejobsError", "litejobs.core.errors.LitejobsError"),
    ("litejobs.exceptions.WebhookError", "litejobs.exceptions.WebhookError"),
    ("litejobs.job", "litejobs.jobs.declarations.job"),
    ("litejobs.Retry", "litejobs.core.retry.Retry"),
    ("litejobs.schedule", "litejobs.scheduling.declarations.schedule"),
    ("litejobs.manual", "litejobs.scheduling.manual.manual"),
    ("litejobs.event", "litejobs.jobs.events.event"),
    ("litejobs.publish_event", "litejobs.jobs.events.publish_event"),
    ("litejobs.Enqueued", "litejobs.jobs.enqueue.Enqueued"),
    ("litejobs.report", "litejobs.reports.reports.report"),
    ("litejobs.Limits", "litejobs.reports.declarations.Limits"),
    ("litejobs.Paging", "litejobs.reports.declarations.Paging"),
    ("litejobs.Audit", "litejobs.reports.declarations.Audit"),
    ("litejobs.Need", "litejobs.reports.declarations.Need"),
    ("litejobs.reports.ReportOutput", "litejobs.reports.output.ReportOutput"),
    ("litejobs.reports.ReportDenied", "litejobs.reports.errors.ReportDenied"),
    ("litejobs.reports.ReportNotFound", "litejobs.reports.errors.ReportNotFound"),
    ("litejobs.reports.ReportParamsInvalid", "litejobs.reports.errors.ReportParamsInvalid"),
    ("litejobs.reports.ReportRefused", "litejobs.reports.errors.ReportRefused"),
    ("litejobs.reports.ReportStopped", "litejobs.reports.errors.ReportStopped"),
    ("litejobs.models.ReportRun", "litejobs.models.reports.ReportRun"),
    ("litejobs.urls.download", "litejobs.reports.views.download"),
]


def resolve(path: str):
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize(("documented", "new"), DOCUMENTED)
def test_a_documented_path_is_the_object_that_moved(documented, new):
    assert resolve(documented) is resolve(new)


#: Names the README shows that are no import path: job and schedule names, logger names of
#: runtimes, stored error classes, check ids.
NOT_PATHS = re.compile(
    r"litejobs\.(?:[EW]\d{3}|webhook_delivery|bulk_item|housekeeping|Timeout|LeaseExpired"
    r"|StepOutcomeUnknown|UnknownJob|[a-z_]+\.v\d)$"
)


def test_every_path_the_readme_shows_resolves():
    readme = (ROOT / "README.md").read_text()
    unresolved = []
    for module, names in re.findall(r"from (litejobs[\w.]*) import ([\w, ]+)", readme):
        for name in (n.strip() for n in names.split(",")):
            try:
                getattr(importlib.import_module(module), name)
            except (ImportError, AttributeError):
                unresolved.append(f"from {module} import {name}")
    for dotted in set(re.findall(r"`(litejobs(?:\.\w+)+)", readme)):
        if NOT_PATHS.match(dotted):
            continue
        try:
            importlib.import_module(dotted)
        except ImportError:
            try:
                resolve(dotted)
            except (ImportError, AttributeError):
                unresolved.append(dotted)
    assert not unresolved
    from django.conf import settings

    assert resolve(settings.TASKS["default"]["BACKEND"]) is resolve(DOCUMENTED[0][1])
    from litejobs.conf import DEFAULTS

    assert resolve(DEFAULTS["CLOCK"]) is resolve("litejobs.core.clock.SystemClock")


def test_webhook_signatures_need_no_settings_and_no_models():
    """A receiver that is no litejobs project imports the signing functions alone."""
    script = (
        "import sys, time\n"
        "from litejobs.webhooks.signing import sign, verify_signature\n"
        "now = int(time.time())\n"
        "header = sign('a-receiver-secret-of-length', b'{}', now, delivery='7', event='t.x')\n"
        "assert verify_signature('a-receiver-secret-of-length', header, b'{}', delivery='7',"
        " event='t.x') == now\n"
        "assert not [m for m in sys.modules if m.startswith('litejobs.models')], 'models'\n"
        "print('verified')\n"
    )
    done = run_python(script)
    assert done.stdout.strip() == "verified", done.stderr


# The test suite and the demo ------------------------------------------------------------------


def test_only_the_demo_tests_import_the_demo_project():
    """The library's tests run on their own settings and test apps: a change to the demo project
    breaks only the demo's tests (``tests/demo/``)."""
    tests = ROOT / "tests"
    importing = sorted(
        str(path.relative_to(ROOT))
        for path in tests.rglob("*.py")
        if (tests / "demo") not in path.parents
        and "project" in {name.partition(".")[0] for name in imported_names(path)}
    )
    assert importing == []
    from django.conf import settings

    assert "project" not in {app.partition(".")[0] for app in settings.INSTALLED_APPS}


def imported_names(path: Path) -> set[str]:
    """The modules a file imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.add(node.module or "")
    return found


def readme_rows() -> dict[str, int]:
    """The README's layout tree: each package or top-level module by the row it is drawn on."""
    block = (ROOT / "README.md").read_text().split("```\nlitejobs/", 1)[1].split("\nproject/")[0]
    return drawn_rows(block)


def drawn_rows(block: str) -> dict[str, int]:
    """A layout tree (its first line, ``litejobs/``, left out): each package or top-level
    module by the row it is drawn on."""
    rows: dict[str, int] = {}
    for number, line in enumerate(block.splitlines()[1:]):
        names = re.split(r"\s{2,}", line.strip())[0].split()
        for name in names:
            unit = "litejobs" if name == "__init__" else f"litejobs.{name.rstrip('/')}"
            rows[unit] = number
    return rows


def test_the_readme_draws_each_package_above_the_ones_it_imports():
    rows = readme_rows()
    units = {".".join(module.split(".")[:2]) for module in sources()}
    assert units <= rows.keys(), f"not drawn: {sorted(units - rows.keys())}"
    top = {package: ".".join(package.split(".")[:2]) for package in package_graph()}
    upward = sorted(
        (top[package], top[imported])
        for package, imported_all in package_graph().items()
        for imported in imported_all
        if top[package] != top[imported] and rows[top[package]] >= rows[top[imported]]
    )
    assert not upward, "drawn at or above what they import: " + str(upward)


def test_the_architecture_page_draws_the_readmes_tree():
    page = (ROOT / "docs" / "explanation" / "architecture.md").read_text()
    block = page.split("```text\nlitejobs/", 1)[1].split("\n```", 1)[0]
    assert drawn_rows(block) == readme_rows()
