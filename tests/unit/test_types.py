"""The types say what they hold: few places in ``litejobs/`` silence the type checker, and each
says why on its line (``# type: ignore[code]  # the reason``)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "litejobs"
#: The most ``type: ignore`` comments the package may hold.
MOST_IGNORES = 12
#: An ignore that names its error codes, then gives its reason as a comment of its own.
EXPLAINED = re.compile(r"#\s*type:\s*ignore\[[a-z-]+(?:,\s*[a-z-]+)*\]\s+#\s*\w.{8,}")


def ignores(root: Path = PACKAGE) -> list[tuple[str, str]]:
    """Every ``type: ignore`` comment under ``root``, as ``(file:line, comment)``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
        found += [
            (f"{path.relative_to(root.parent)}:{token.start[0]}", token.string)
            for token in tokens
            if token.type == tokenize.COMMENT and re.search(r"type:\s*ignore", token.string)
        ]
    return found


def unexplained(found: list[tuple[str, str]]) -> list[str]:
    return [where for where, comment in found if not EXPLAINED.search(comment)]


def test_the_package_silences_the_type_checker_in_few_places():
    found = ignores()
    assert len(found) <= MOST_IGNORES, (
        f"{len(found)} `type: ignore` comments in litejobs/ (at most {MOST_IGNORES}): type the "
        "value instead.\n" + "\n".join(where for where, _ in found)
    )


def test_every_ignore_names_its_codes_and_says_why():
    assert unexplained(ignores()) == []


def test_an_ignore_without_its_reason_or_codes_is_found(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "m.py").write_text(
        "a = f()  # type: ignore[misc]\n"
        "b = f()  # type: ignore\n"
        "c = f()  # type: ignore[misc]  # the stubs lack it\n"
        'd = "# type: ignore"\n'
    )
    found = ignores(package)
    assert [where for where, _ in found] == ["pkg/m.py:1", "pkg/m.py:2", "pkg/m.py:3"]
    assert unexplained(found) == ["pkg/m.py:1", "pkg/m.py:2"]
