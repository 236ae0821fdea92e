"""One registry type for every kind of declaration: jobs, events, schedules, work queues, ...

Each kind keeps its declarations by name in a ``Registry`` (a dict, like django-pgtrigger's
``_Registry``). ``register`` refuses a second declaration of a name made elsewhere, with the
kind's own error naming both places, and lets a module imported again (its first import
failed half-way) replace its own; ``registry[name]`` raises the kind's not-found error, while
``registry.get(name)`` answers ``None``; ``all()`` answers the declarations by name. Tests
that declare on the fly ``unregister`` what they declared.
"""

from __future__ import annotations

from collections import UserDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar, overload

T = TypeVar("T")
D = TypeVar("D")


def declared_in(item: Any) -> Hashable:
    """Where a declaration was made: its ``module`` (a dataclass field of most kinds)."""
    module: Hashable = item.module
    return module


class Registry(UserDict[str, T]):
    """The declarations of one kind, by name."""

    def __init__(
        self,
        kind: str,
        *,
        origin: Callable[[T], Hashable] | None = declared_in,
        duplicate: Callable[[str, T, T], Exception] | None = None,
        missing: Callable[[str], Exception] | None = None,
    ) -> None:
        super().__init__()
        self.kind = kind
        self._origin = origin
        self._duplicate = duplicate
        self._missing = missing

    def __repr__(self) -> str:
        return f"<Registry of {self.kind}: {', '.join(sorted(self.data)) or 'none'}>"

    def register(self, name: str, item: T) -> T:
        """Keep ``item`` as ``name``; a declaration of that name from elsewhere is refused."""
        existing = self.data.get(name)
        if (
            existing is not None
            and self._duplicate is not None
            and self._origin is not None
            and self._origin(existing) != self._origin(item)
        ):
            raise self._duplicate(name, existing, item)
        self.data[name] = item
        return item

    def __missing__(self, name: str) -> T:
        if self._missing is None:
            raise KeyError(name)
        raise self._missing(name)

    @overload
    def get(self, name: str, default: None = None) -> T | None: ...

    @overload
    def get(self, name: str, default: D) -> T | D: ...

    def get(self, name: str, default: object = None) -> object:
        """The declaration of ``name``, or ``default``: never the kind's not-found error
        (``UserDict.get`` reaches ``__missing__`` on Python 3.11)."""
        return self.data.get(name, default)

    def all(self) -> list[T]:
        """Every declaration, by name."""
        return [self.data[name] for name in sorted(self.data)]

    def unregister(self, name: str) -> None:
        """Forget a declaration (tests that declare on the fly)."""
        self.data.pop(name, None)
