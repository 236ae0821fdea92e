"""Named SQL statements read from ``.sql`` files: the loader (a package of ``.sql`` files
makes one for its statements).

A file holds statements under ``-- name: <statement>`` lines. ``{placeholder}`` in a body is
filled from the loader's table (state lists, the lease clock), once; any other ``{...}`` is
left for the caller to fill (a statement assembled per call). A name may appear once across
all the files of a package, so ``query(name)`` is unambiguous. A body whose first line is
``-- prepared`` marks a statement to prepare server-side: one whose plan depends on no
parameter's value, so the plan PostgreSQL keeps for it (a generic one) is as good as a fresh
one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import cached_property
from importlib.resources import files

_NAME = re.compile(r"^-- name: ([a-z_]+)\s*$", re.MULTILINE)
_PREPARED = "-- prepared\n"


class Statements:
    """Every named statement of the ``.sql`` files of ``package``, with placeholders filled."""

    def __init__(self, package: str, placeholders: Callable[[], Mapping[str, str]]) -> None:
        self.package = package
        self._placeholders = placeholders

    @cached_property
    def all(self) -> dict[str, str]:
        """Every statement by name (read once)."""
        return {name: body for name, (body, _) in self._read.items()}

    @cached_property
    def prepared(self) -> frozenset[str]:
        """The names of the statements marked ``-- prepared``."""
        return frozenset(name for name, (_, prepared) in self._read.items() if prepared)

    @cached_property
    def _read(self) -> dict[str, tuple[str, bool]]:
        values = self._placeholders()
        found: dict[str, tuple[str, bool]] = {}
        sources = sorted(
            (entry for entry in files(self.package).iterdir() if entry.name.endswith(".sql")),
            key=lambda entry: entry.name,
        )
        for source in sources:
            parts = _NAME.split(source.read_text(encoding="utf-8"))[1:]
            for name, body in zip(parts[::2], parts[1::2], strict=True):
                if name in found:
                    raise ValueError(f"SQL statement {name!r} is named twice ({source.name}).")
                body = body.strip() + "\n"
                found[name] = (
                    _fill(body.removeprefix(_PREPARED).strip(), values),
                    body.startswith(_PREPARED),
                )
        return found

    def __getitem__(self, name: str) -> str:
        return self.all[name]


def _fill(body: str, values: Mapping[str, str]) -> str:
    for placeholder, value in values.items():
        body = body.replace("{" + placeholder + "}", value)
    return body
