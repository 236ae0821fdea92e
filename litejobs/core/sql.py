"""Named SQL statements read from ``.sql`` files: the loader (see ``litejobs.sql``).

A file holds statements under ``-- name: <statement>`` lines. ``{placeholder}`` in a body is
filled from the loader's table (state lists, the lease clock), once; any other ``{...}`` is
left for the caller to fill (a statement assembled per call). A name may appear once across
all the files of a package, so ``query(name)`` is unambiguous.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import cached_property
from importlib.resources import files

_NAME = re.compile(r"^-- name: ([a-z_]+)\s*$", re.MULTILINE)


class Statements:
    """Every named statement of the ``.sql`` files of ``package``, with placeholders filled."""

    def __init__(self, package: str, placeholders: Callable[[], Mapping[str, str]]) -> None:
        self.package = package
        self._placeholders = placeholders

    @cached_property
    def all(self) -> dict[str, str]:
        """Every statement by name (read once)."""
        values = self._placeholders()
        found: dict[str, str] = {}
        sources = sorted(
            (entry for entry in files(self.package).iterdir() if entry.name.endswith(".sql")),
            key=lambda entry: entry.name,
        )
        for source in sources:
            parts = _NAME.split(source.read_text(encoding="utf-8"))[1:]
            for name, body in zip(parts[::2], parts[1::2], strict=True):
                if name in found:
                    raise ValueError(f"SQL statement {name!r} is named twice ({source.name}).")
                found[name] = _fill(body.strip(), values)
        return found

    def __getitem__(self, name: str) -> str:
        return self.all[name]


def _fill(body: str, values: Mapping[str, str]) -> str:
    for placeholder, value in values.items():
        body = body.replace("{" + placeholder + "}", value)
    return body
