"""The package does not write the same code twice: few pairs of places in ``litejobs/`` share
a run of lines, and the count can only go down.

A small, honest detector of its own, so that it runs wherever the suite runs:
each source file (``.py``, ``.html``, ``.sql``, ``.css``, ``.js``) is read as lines with
whitespace folded, leaving out blank lines, comments, import statements (a parenthesised one
over several lines too) and lines of lone punctuation (a closing bracket). Two places share a
run when ``RUN`` such lines stand at both, identical; a pair is two files that share at least
one run, or one file that holds a run twice without overlap. Identical lines only: code copied
and then renamed is not seen here, so the count is lower than a detector's that also matches
lines of the same shape (on the tree where this counted 11 pairs, such a detector counted 148
in ``litejobs/``, 58 of them between migrations).

``litejobs/migrations/`` is left out. Migrations are history: each is written once by
``makemigrations``, never edited after its release (a database that applied it would not
apply the change), and their repetition is Django's own operation format (a ``CreateModel``
per table, an ``AddIndex`` per index) rather than logic written twice, so no change to the
code could lower their count. Counting them would only let the budget of real code grow by
what the migrations happen to share.
"""

from __future__ import annotations

import re
from collections import defaultdict
from itertools import combinations
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "litejobs"
#: How many identical lines make a shared run.
RUN = 6
#: The most pairs of places sharing a run the package may hold (the count when the gate was
#: set; lower it when a change removes some).
MOST_PAIRS = 2
#: The source files read, by their ending.
SOURCES = {".py", ".html", ".sql", ".css", ".js"}
#: Folders whose files are not counted (see the module's docstring).
LEFT_OUT = {"migrations"}
#: Lines passed over: comments (Python, SQL, templates, CSS and JS).
COMMENT = re.compile(r"^(#|--|//|/\*|\*|\{#|\{% comment|<!--)")
#: Lines passed over: an import statement, or a line of lone punctuation.
IMPORT = re.compile(r"^(from\s+\S+\s+import\b|import\s)")
PUNCTUATION = re.compile(r"^[()\[\]{},:;]+$")

Place = tuple[str, int]


def lines_of(path: Path) -> list[tuple[int, str]]:
    """The lines of ``path`` that count, as (line number, the line with whitespace folded)."""
    kept: list[tuple[int, str]] = []
    in_import = False
    for number, raw in enumerate(path.read_text(errors="replace").splitlines(), 1):
        line = " ".join(raw.split())
        if in_import:
            in_import = ")" not in line
            continue
        if path.suffix == ".py" and IMPORT.match(line):
            in_import = line.endswith("(")
            continue
        if line and not COMMENT.match(line) and not PUNCTUATION.match(line):
            kept.append((number, line))
    return kept


def sources(root: Path = PACKAGE) -> list[Path]:
    return sorted(
        path
        for path in root.rglob("*")
        if path.suffix in SOURCES
        and path.is_file()
        and not LEFT_OUT & set(path.relative_to(root).parts)
    )


def shared_runs(root: Path = PACKAGE, run: int = RUN) -> dict[tuple[str, str], tuple[Place, Place]]:
    """Each pair of files sharing a run of ``run`` identical lines (a file paired with itself
    when it holds one twice, apart), with the first two places found."""
    places: dict[tuple[str, ...], list[Place]] = defaultdict(list)
    for path in sources(root):
        name = str(path.relative_to(root))
        kept = lines_of(path)
        for start in range(len(kept) - run + 1):
            window = tuple(line for _, line in kept[start : start + run])
            places[window].append((name, start))
    pairs: dict[tuple[str, str], tuple[Place, Place]] = {}
    for found in places.values():
        for one, other in combinations(found, 2):
            if one[0] == other[0] and other[1] - one[1] < run:
                continue  # the same lines, overlapping themselves
            pairs.setdefault((one[0], other[0]), (one, other))
    return pairs


def described(pairs: dict[tuple[str, str], tuple[Place, Place]], root: Path = PACKAGE) -> str:
    """One line per pair, naming the first lines of a run they share."""
    numbers = {name: lines_of(root / name) for name in {n for pair in pairs for n in pair}}
    return "\n".join(
        f"{one}:{numbers[one][at][0]} ~ {other}:{numbers[other][again][0]}"
        for (one, at), (other, again) in sorted(pairs.values())
    )


def test_few_places_in_the_package_repeat_a_run_of_lines():
    pairs = shared_runs()
    assert len(pairs) <= MOST_PAIRS, (
        f"{len(pairs)} pairs of places in litejobs/ share {RUN} identical lines (at most "
        f"{MOST_PAIRS}): write the logic once, in the lowest module both may import.\n"
        + described(pairs)
    )


def test_a_pasted_block_is_found_and_what_does_not_count_is_passed_over(tmp_path):
    # The gate's own proof: a block pasted into a second file, and twice into one file, is a
    # pair each time; five shared lines, shared imports, comments and brackets are none.
    block = "".join(f"value_{n} = compute({n})\n" for n in range(RUN))
    (tmp_path / "one.py").write_text(f"def f():\n{block}")
    (tmp_path / "two.py").write_text(f"x = 1\n\n{block}# the same again\n")
    (tmp_path / "twice.py").write_text(f"{block}y = 2\n{block}")
    (tmp_path / "migrations").mkdir()
    (tmp_path / "migrations" / "0001_initial.py").write_text(block)
    short = "".join(f"short_{n} = {n}\n" for n in range(RUN - 1))
    imports = "from django.db import (\n    models,\n    connections,\n    transaction,\n)\n"
    noise = "import json\n# a comment\n)\n]\n\n" * RUN
    for name in ("three.py", "four.py"):
        (tmp_path / name).write_text(f"{imports}{short}{noise}")
    assert described(shared_runs(tmp_path), tmp_path).splitlines() == [
        "one.py:2 ~ twice.py:1",
        "one.py:2 ~ two.py:3",
        "twice.py:1 ~ twice.py:8",
        "twice.py:1 ~ two.py:3",
    ]
