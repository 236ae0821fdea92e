"""Close matches of misspelt names ("did you mean 'emails'?") for messages that name the fix."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


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
