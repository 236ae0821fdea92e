"""A job's payload schema versions: ``version=`` with the ``upgrade=`` functions that lift an
older payload one version up, checked at declaration, and a stored payload lifted to the
declaration's version before its body runs (a rolling deploy's older rows)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..exceptions import DeclarationError

#: Payload schema versions are stored in a smallint.
MAX_VERSION = 32767


def check_version(
    name: str, version: Any, upgrade: Any
) -> tuple[int, dict[int, Callable[..., Any]]]:
    """Job ``name``'s version and its upgrades: each older payload version needs the function
    that lifts it one version up (``version-invalid``)."""
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= MAX_VERSION:
        raise DeclarationError(
            f"Job {name!r}: version= is the payload's schema version, a whole number "
            f"from 1 to {MAX_VERSION}; got {version!r}.",
            code="version-invalid",
        )
    upgrades = {} if upgrade is None else upgrade
    older = set(range(1, version))
    if (
        not isinstance(upgrades, Mapping)
        or set(upgrades) != older
        or not all(callable(fn) for fn in upgrades.values())
    ):
        wanted = ", ".join(f"{v}: fn_{v}_to_{v + 1}" for v in sorted(older)) or "nothing"
        raise DeclarationError(
            f"Job {name!r}: version={version} needs upgrade= with one function per "
            f"older payload version, each taking that version's arguments (a dict) and "
            f"answering the next version's: upgrade={{{wanted}}}; got {upgrade!r}.",
            code="version-invalid",
        )
    return version, dict(upgrades)


def lift(
    name: str,
    payload: Mapping[str, Any],
    version: int,
    current: int,
    upgrade: Mapping[int, Callable[..., Any]],
) -> dict[str, Any]:
    """Job ``name``'s payload stored at ``version``, lifted to its ``current`` version."""
    arguments = dict(payload)
    for old in range(version, current):
        arguments = upgrade[old](arguments)
        if not isinstance(arguments, dict):
            raise TypeError(
                f"upgrade[{old}] of job {name!r} answered a {type(arguments).__name__}; "
                f"it must answer the version {old + 1} arguments as a dict."
            )
    return arguments
