"""Every named SQL statement is used by the code, and runs through ``run_query`` alone."""

import ast
from pathlib import Path

from litejobs.sql import queries
from tests.conftest import ROOT

PACKAGE = ROOT / "litejobs"
#: The one module that reads a named statement's text and executes it (``run_query``).
RUNNER = "litejobs/sql/cursors.py"
#: What reads a statement's text: the loader's functions of ``litejobs.sql``.
READERS = {"query", "queries"}
#: The functions that run a statement by its name.
RUNNING = {"run_query", "arun_query"}


def modules(root: Path = PACKAGE) -> dict[str, ast.Module]:
    """Every module of the package (migrations aside), by its path from the package's parent."""
    return {
        path.relative_to(root.parent).as_posix(): ast.parse(path.read_text(), str(path))
        for path in root.rglob("*.py")
        if "migrations" not in path.parts
    }


def _called(node: ast.Call) -> str:
    """The function a call names: ``f(...)``, ``module.f(...)``, ``obj.f(...)``."""
    func = node.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def _reads(node: ast.Call) -> bool:
    """``query(...)`` or ``sql.query(...)`` (not a declaration's own ``query`` method)."""
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr in READERS and isinstance(func.value, ast.Name) and func.value.id == "sql"
    return isinstance(func, ast.Name) and func.id in READERS


def _from_sql(node: ast.ImportFrom, path: str) -> bool:
    """Whether ``from ... import`` reads from ``litejobs.sql`` (absolute or relative)."""
    if node.level == 0:
        return node.module == "litejobs.sql"
    package = path.split("/")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])]) == "litejobs.sql"


def statement_readers(root: Path = PACKAGE) -> set[str]:
    """The modules other than ``sql/cursors`` that read a statement's text themselves: they
    import ``query`` (or ``queries``) from ``litejobs.sql``, or call ``query(...)``."""
    found = set()
    for path, tree in modules(root).items():
        for node in ast.walk(tree):
            imports = (
                isinstance(node, ast.ImportFrom)
                and _from_sql(node, path)
                and any(alias.name in READERS for alias in node.names)
            )
            calls = isinstance(node, ast.Call) and _reads(node)
            if (imports or calls) and path != RUNNER:
                found.add(path)
    return found


def names_run(root: Path = PACKAGE) -> set[str]:
    """The statement names written in a ``run_query(cursor, "name", ...)`` call."""
    return {
        node.args[1].value
        for tree in modules(root).values()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and _called(node) in RUNNING
        and len(node.args) > 1
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    }


def names_handed(root: Path = PACKAGE) -> set[str]:
    """Every string the code hands on as a value (a call's argument, a dict's value, an
    assignment): where a statement's name travels to ``run_query`` (a purge's registered
    statement, a work item's command). Docstrings and comments are not."""
    return {
        child.value
        for tree in modules(root).values()
        for node in ast.walk(tree)
        if not isinstance(node, ast.Expr)
        for child in ast.iter_child_nodes(node)
        if isinstance(child, ast.Constant) and isinstance(child.value, str)
    }


def test_every_named_query_is_used_by_the_code():
    assert set(queries()) <= names_handed(), "named statements no code runs"
    assert names_run() <= set(queries()), "run_query calls naming no statement"


def test_every_named_statement_runs_through_run_query():
    """No module but ``sql/cursors`` reads a named statement's text (``query(...)``) to execute
    it itself: every statement runs through ``run_query`` (or ``arun_query``), which prepares
    it server-side where it is marked so and nowhere else."""
    assert not statement_readers()


def test_the_run_query_check_finds_a_module_that_reads_a_statement(tmp_path):
    # The check's own proof: one module imports query from the sql package, another calls it
    # through the package; the runner itself may.
    package = tmp_path / "litejobs"
    (package / "sql").mkdir(parents=True)
    (package / "jobs").mkdir()
    for name in ("__init__.py", "sql/__init__.py", "jobs/__init__.py"):
        (package / name).write_text("")
    (package / "sql" / "cursors.py").write_text("from . import query\nquery('a')\n")
    (package / "jobs" / "one.py").write_text("from ..sql import query\n")
    (package / "jobs" / "two.py").write_text("from .. import sql\nsql.query('b')\n")
    (package / "jobs" / "three.py").write_text("from ..sql.cursors import run_query\n")
    assert statement_readers(package) == {"litejobs/jobs/one.py", "litejobs/jobs/two.py"}
