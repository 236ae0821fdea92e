"""Close matches of misspelt names ("did you mean 'emails'?") for messages that name the fix."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

from .errors import DeclarationError


def close_match(word: str, known: Iterable[str], cutoff: float = 0.7) -> str | None:
    """The known name ``word`` most likely misspells (case-insensitive), if one is close
    (a similarity ratio of at least ``cutoff``; a short list of names can take a lower one)."""
    by_folded = {name.casefold(): name for name in known if name != word}
    found = difflib.get_close_matches(word.casefold(), list(by_folded), n=1, cutoff=cutoff)
    return by_folded[found[0]] if found else None


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``" Did you mean 'emails'?"`` when a known name is close to ``word``, else ``""``."""
    match = close_match(word, known)
    return f" Did you mean {match!r}?" if match else ""


def unknown_option(what: str, option: str, options: Sequence[str], takes: str) -> DeclarationError:
    """The declaration error of an option ``takes`` (``"@job"``, ``"report()"``) does not take,
    naming the option it most likely misspells (among so few, a plural or a tense is a likely
    slip: ``retries``), else every option it takes. ``what`` names the declaration."""
    match = close_match(option, options, cutoff=0.6)
    return DeclarationError(
        f"{what}: unknown option {option!r}; "
        + (f"did you mean {match!r}?" if match else f"{takes} takes {', '.join(options)}."),
        code="option-unknown",
    )
