"""The ``@job`` options about how runs start and end beyond the queue's defaults: a settle hook
(``on_settled=``, run by the ``litejobs.hooks`` feature after each ending) and a debounce
(``debounce=``, a job not started yet is moved instead of a new one added). Both are checked at
declaration, each refusal a ``DeclarationError`` with its code.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from datetime import timedelta
from typing import Any, cast

from ..core.durations import format_duration, parse_duration
from ..exceptions import DeclarationError, InvalidInput

#: The longest debounce a job may declare: a quiet period, not a schedule.
MAX_DEBOUNCE = timedelta(days=1)


def check_on_settled(job: str, hook: Any) -> Callable[[Any], Any] | None:
    """``hook`` if it can be a settle hook: a module-level function (or callable) that takes
    one argument, found again by its dotted path in a worker; ``on-settled-invalid`` else."""
    if hook is None:
        return None
    if not callable(hook):
        raise _invalid_hook(job, f"got a {type(hook).__name__}, which is not callable")
    path = dotted_path(hook)
    if "<" in path:  # <lambda>, <locals>: nothing a worker can import by name
        raise _invalid_hook(job, f"{path} is a lambda or a nested function")
    if not _found_at(path, hook):
        raise _invalid_hook(job, f"{path} is not found at its dotted path")
    if not _takes_one_argument(hook):
        raise _invalid_hook(job, f"{path} must take one argument, the Settled value")
    return cast("Callable[[Any], Any]", hook)


def dotted_path(hook: Callable[..., Any]) -> str:
    """Where a worker finds ``hook``: its module and qualified name."""
    module = getattr(hook, "__module__", None) or "?"
    name = getattr(hook, "__qualname__", None) or type(hook).__qualname__
    return f"{module}.{name}"


def _found_at(path: str, hook: Callable[..., Any]) -> bool:
    """Whether ``hook`` is what its module holds under its name (a module still importing
    holds what it has defined so far)."""
    module_name = getattr(hook, "__module__", None)
    module = sys.modules.get(module_name or "")
    if module is None:
        return False
    found: Any = module
    for part in path[len(module_name or "") + 1 :].split("."):
        found = getattr(found, part, None)
    return found is hook or getattr(found, "__wrapped__", None) is hook


def _takes_one_argument(hook: Callable[..., Any]) -> bool:
    try:
        inspect.signature(hook).bind(None)
    except TypeError:
        return False
    except ValueError:  # a builtin without a signature: let the call decide
        return True
    return True


def _invalid_hook(job: str, problem: str) -> DeclarationError:
    return DeclarationError(
        f"Job {job!r}: on_settled= takes a function defined at module level that takes one "
        f"argument (def on_ended(settled): ...), so a worker finds it by its dotted path; "
        f"{problem}.",
        code="on-settled-invalid",
    )


def check_debounce(job: str, debounce: Any) -> timedelta | None:
    """``debounce`` as a duration above zero and at most ``MAX_DEBOUNCE``;
    ``debounce-invalid`` else."""
    if debounce is None:
        return None
    try:
        quiet = parse_duration(debounce, name=f"debounce of job {job!r}", allow_zero=False)
    except InvalidInput as exc:
        raise _invalid_debounce(job, exc.args[0]) from exc
    if quiet > MAX_DEBOUNCE:
        raise _invalid_debounce(job, f"{format_duration(quiet)} is longer than that.")
    return quiet


def _invalid_debounce(job: str, problem: str) -> DeclarationError:
    return DeclarationError(
        f"Job {job!r}: debounce= takes a duration above zero of at most "
        f"{format_duration(MAX_DEBOUNCE)}, such as '5s' (the quiet period after the last "
        f"enqueue of a key before its job runs). {problem}",
        code="debounce-invalid",
    )
