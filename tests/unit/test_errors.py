"""Every refusal class has one home: ``litejobs.exceptions`` (and the base errors of the core
it publishes) for what litejobs raises outside a feature package of its own, else its
feature's ``errors`` module."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "litejobs"
#: The base of every refusal.
BASE = "LitejobsError"


def is_home(path: str) -> bool:
    """``exceptions.py``, ``core/errors.py`` or a feature's ``errors.py`` (paths from the
    package's parent)."""
    return path in ("litejobs/exceptions.py", "litejobs/core/errors.py") or (
        path.endswith("/errors.py") and path.count("/") == 2
    )


def _bases(node: ast.ClassDef) -> set[str]:
    """The names of a class's bases (``errors.BulkRefused`` names ``BulkRefused``)."""
    return {
        base.id if isinstance(base, ast.Name) else base.attr
        for base in node.bases
        if isinstance(base, ast.Name | ast.Attribute)
    }


def error_classes(root: Path = PACKAGE) -> dict[str, set[str]]:
    """module path -> the refusal classes it defines: ``LitejobsError`` and every class that
    derives from one (by the names of its bases, across the package)."""
    classes = {
        (path.relative_to(root.parent).as_posix(), node.name): _bases(node)
        for path in root.rglob("*.py")
        if "migrations" not in path.parts
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.ClassDef)
    }
    errors = {BASE}
    while True:
        found = {name for (_, name), bases in classes.items() if bases & errors} | errors
        if found == errors:
            break
        errors = found
    homes: dict[str, set[str]] = {}
    for (path, name), bases in classes.items():
        if name == BASE or bases & errors:
            homes.setdefault(path, set()).add(name)
    return homes


def test_every_refusal_class_lives_in_an_errors_home():
    strays = {path: names for path, names in error_classes().items() if not is_home(path)}
    assert not strays, f"refusal classes outside exceptions.py and the errors modules: {strays}"


def test_the_home_check_finds_a_refusal_defined_beside_its_code(tmp_path):
    # The check's own proof: a feature's refusal (and one derived from it) defined in its
    # operations module; the feature's errors module and the top exceptions are homes.
    package = tmp_path / "litejobs"
    (package / "core").mkdir(parents=True)
    (package / "shop").mkdir()
    (package / "core" / "errors.py").write_text("class LitejobsError(Exception): ...\n")
    (package / "exceptions.py").write_text(
        "from .core.errors import LitejobsError\nclass JobNotFound(LitejobsError): ...\n"
    )
    (package / "shop" / "errors.py").write_text(
        "from ..core.errors import LitejobsError\nclass ShopRefused(LitejobsError): ...\n"
    )
    (package / "shop" / "operations.py").write_text(
        "from . import errors\n"
        "class Closed(errors.ShopRefused): ...\n"
        "class _Late(Closed): ...\n"
        "class Plain(Exception): ...\n"
    )
    found = error_classes(package)
    assert {path for path in found if not is_home(path)} == {"litejobs/shop/operations.py"}
    assert found["litejobs/shop/operations.py"] == {"Closed", "_Late"}
