"""Human work queues: ``work_queue(...)`` and ``@score_rule(...)`` declarations.

Each app's ``queues.py`` (autodiscovered after its ``jobs.py`` and ``schedules.py``) declares
the queues staff clear in the admin::

    from litejobs.workqueues import score_rule, work_queue

    @score_rule("dispute.urgency")
    def urgency(dispute):
        return 82, {"amount": "EUR 1,900", "age": "6 days", "evidence": "evidence missing"}

    disputes = work_queue("disputes", model=Dispute, claim="required",
                          score="dispute.urgency", claim_lease="1h",
                          permission="payments.review_dispute")

A queue states its **claim mode** (``disabled``: no claims; ``optional``: a claim is a visible
hold others cannot act through; ``required``: nothing is done to an item without the acting
user's live claim), the **score rule** its listing is ordered by (highest first, then oldest;
without a rule, oldest first), how long a claim lasts, and the permission staff need to see
and work it. A score rule answers the score *and the inputs that set it*, shown beside each
item so staff can check the order instead of trusting it.

An invalid declaration raises ``DeclarationError`` (code ``work-queue-invalid``) naming the
fix; autodiscovery keeps it for ``manage.py check`` (litejobs.E010) instead of stopping Django,
and a queue citing a rule no installed app declares is litejobs.E011 (``score-rule-unknown``).
"""

from __future__ import annotations

import inspect
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.db import models

from ..core.discovery import Discovery
from ..core.durations import parse_duration
from ..core.enums import ClaimMode, values_of
from ..core.registry import Registry
from ..exceptions import DeclarationError, InvalidInput, LitejobsError
from .errors import WorkQueueNotFound

#: The claim modes a queue must choose from.
CLAIM_MODES = values_of(ClaimMode)
#: Queue names and rule ids: letters, digits and ``_.-`` (they appear in URLs).
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
#: ``app_label.codename``, as ``User.has_perm`` takes it.
PERMISSION_PATTERN = re.compile(r"^[a-z_][a-z0-9_]*\.[A-Za-z0-9_]+$")
#: Resolution values: short identifiers stored on the item.
RESOLUTION_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,49}$")
#: Bounds of what a score rule may answer (the inputs are shown on every row).
MAX_INPUTS = 12
MAX_INPUT_TEXT = 200
#: Claims shorter than this expire before anyone could act; longer ones park items for days.
MIN_LEASE = timedelta(seconds=10)
MAX_LEASE = timedelta(days=7)


def _rule_twice(rule_id: str, existing: ScoreRule, new: ScoreRule) -> DeclarationError:
    return _invalid(
        f"Score rule {rule_id!r}",
        f"declared twice ({existing.module} and {new.module}); give one another id.",
    )


def _queue_twice(name: str, existing: WorkQueue, new: WorkQueue) -> DeclarationError:
    return _invalid(
        f"Work queue {name!r}", f"declared twice ({existing.module} and {new.module}); rename one."
    )


def _unknown(name: str) -> WorkQueueNotFound:
    return WorkQueueNotFound(
        f"No installed app declares a work queue named {name!r}: declare it with "
        "work_queue(...) in an app's queues.py (the admin lists the declared queues)."
    )


_rules: Registry[ScoreRule] = Registry("score rule", duplicate=_rule_twice)
_queues: Registry[WorkQueue] = Registry("work queue", duplicate=_queue_twice, missing=_unknown)
#: Each installed app's ``queues.py`` (work queues, score rules, bulk money actions).
discovery = Discovery("queues")


def _invalid(what: str, message: str) -> DeclarationError:
    return DeclarationError(f"{what}: {message}", code="work-queue-invalid")


# Score rules ---------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ScoreRule:
    """A declared calculation: ``func(row) -> (score, inputs)``. See ``score_rule``."""

    id: str
    func: Callable[[Any], Any]
    label: str
    module: str = ""

    def __call__(self, row: Any) -> tuple[float, list[list[str]]]:
        """Score ``row``: answers the score as a float and the inputs as ordered pairs.

        Refuses (``score-invalid``) an answer that is not ``(number, inputs)``: a rule that
        cannot say why an item ranks where it does must not rank it.
        """
        answer = self.func(row)
        if not (isinstance(answer, tuple | list) and len(answer) == 2):
            raise self._bad("answer (score, inputs), e.g. return 82, {'amount': 'EUR 1,900'}")
        score, inputs = answer
        if isinstance(score, bool) or not isinstance(score, int | float | Decimal):
            raise self._bad(f"answer a number as the score, not a {type(score).__name__}")
        score = float(score)
        if not math.isfinite(score):
            raise self._bad("answer a finite score (not NaN or infinity)")
        return score, self._pairs(inputs)

    def _pairs(self, inputs: Any) -> list[list[str]]:
        if isinstance(inputs, Mapping):
            items = list(inputs.items())
        elif isinstance(inputs, Sequence) and not isinstance(inputs, str | bytes):
            items = list(inputs)
            if not all(isinstance(pair, tuple | list) and len(pair) == 2 for pair in items):
                raise self._bad("give the inputs as a dict or a list of (name, value) pairs")
        else:
            raise self._bad("give the inputs as a dict or a list of (name, value) pairs")
        if not items:
            raise self._bad("name at least one input: staff see why an item ranks where it does")
        if len(items) > MAX_INPUTS:
            raise self._bad(f"give at most {MAX_INPUTS} inputs (they are shown on every row)")
        pairs = []
        for name, value in items:
            name, text = str(name).strip(), str(value).strip()
            if not name or not text:
                raise self._bad("give every input a name and a value to show")
            if len(name) > MAX_INPUT_TEXT or len(text) > MAX_INPUT_TEXT:
                raise self._bad(f"keep input names and values within {MAX_INPUT_TEXT} characters")
            pairs.append([name, text])
        return pairs

    def _bad(self, fix: str) -> InvalidInput:
        return InvalidInput(
            f"Score rule {self.id!r} answered an unusable value; {fix}.", code="score-invalid"
        )


def score_rule(
    id: str, *, label: str | None = None
) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    """Declare the calculation a queue's order cites, under a durable ``id``.

    The decorated function receives the item's model row and answers ``(score, inputs)``:
    a number (higher is more urgent) and an ordered mapping of input name to the value as staff
    should read it (``{"amount": "EUR 1,900", "age": "6 days"}``). Listings show
    ``<label> <score>: <value> · <value> …``; ``label`` defaults to the id's last segment
    (``dispute.urgency`` → ``urgency``). Rules read the time through ``litejobs.clock.now()``.
    """
    if not isinstance(id, str) or not NAME_PATTERN.match(id):
        raise _invalid(
            f"Score rule {id!r}",
            "give it an id of 1-100 letters, digits or '_.-' (e.g. "
            "'dispute.urgency'): queues cite it by that id.",
        )
    if label is not None and (not isinstance(label, str) or not label.strip()):
        raise _invalid(f"Score rule {id!r}", "label= must be a non-empty string when given.")
    module = _caller_module()

    def register(func: Callable[[Any], Any]) -> Callable[[Any], Any]:
        if not callable(func):
            raise _invalid(f"Score rule {id!r}", "decorate a function of one argument (the row).")
        try:
            inspect.signature(func).bind(object())
        except TypeError as error:
            raise _invalid(
                f"Score rule {id!r}",
                f"{getattr(func, '__qualname__', func)!r} must take exactly one positional "
                "argument: the item's model row.",
            ) from error
        _rules.register(id, ScoreRule(id, func, (label or id.rsplit(".", 1)[-1]).strip(), module))
        return func

    return register


def get_rule(rule_id: str) -> ScoreRule | None:
    """The declared rule with this id, if any installed app declares it."""
    return _rules.get(rule_id)


def unregister_rule(rule_id: str) -> None:
    """Forget a rule (tests that declare rules on the fly)."""
    _rules.unregister(rule_id)


# Work queues ---------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class WorkQueue:
    """A validated work queue. Created by ``work_queue(...)``; see its docstring."""

    name: str
    model: type[models.Model]
    claim: ClaimMode
    score: str | None
    claim_lease: timedelta
    permission: str
    resolutions: tuple[tuple[str, str], ...]
    label: str
    description: str = ""
    module: str = ""

    def __repr__(self) -> str:
        return f"<WorkQueue {self.name} claim={self.claim} score={self.score}>"

    @property
    def claims_enabled(self) -> bool:
        """Whether people claim items here (``optional`` or ``required``)."""
        return self.claim != ClaimMode.DISABLED

    @property
    def claims_required(self) -> bool:
        """Whether every action needs the acting user's live claim."""
        return self.claim == ClaimMode.REQUIRED

    def rule(self) -> ScoreRule | None:
        """The rule the order cites; ``score-rule-unknown`` if no installed app declares it."""
        if self.score is None:
            return None
        rule = _rules.get(self.score)
        if rule is None:
            raise LitejobsError(
                f"Work queue {self.name!r} is scored by {self.score!r}, which no installed app "
                "declares: add @score_rule("
                f"{self.score!r}) to a queues.py, or fix score= (manage.py check reports it).",
                code="score-rule-unknown",
            )
        return rule

    def score_of(self, row: models.Model) -> tuple[float, list[list[str]], str]:
        """``(score, inputs, rule id)`` of a row; an unscored queue scores 0 with no inputs."""
        rule = self.rule()
        if rule is None:
            return 0.0, [], ""
        score, inputs = rule(row)
        return score, inputs, rule.id

    def allows(self, user: Any) -> bool:
        """Whether ``user`` may see and work this queue: active and holding its permission."""
        return bool(
            user is not None
            and getattr(user, "is_active", False)
            and user.has_perm(self.permission)
        )

    def resolution_label(self, value: str) -> str:
        """How a stored resolution reads (the value itself when no longer declared)."""
        return dict(self.resolutions).get(value, value)

    def check_resolution(self, value: str | None) -> str:
        """The resolution to store; a single-resolution queue needs none named."""
        values = sorted(v for v, _ in self.resolutions)
        if value is None or value == "":
            if len(self.resolutions) == 1:
                return self.resolutions[0][0]
            raise InvalidInput(
                f"Work queue {self.name!r} resolves items as one of {values}; say which.",
                code="resolution-invalid",
            )
        if value not in values:
            raise InvalidInput(
                f"Work queue {self.name!r} has no resolution {value!r}; use one of {values}.",
                code="resolution-invalid",
            )
        return value

    @property
    def order_description(self) -> str:
        """The listing order in words, citing the rule (shown on the queue page)."""
        if self.score is None:
            return "oldest first (this queue has no score rule)"
        return f"by score of rule {self.score}, highest first, then oldest first"


def work_queue(
    name: str,
    *,
    model: type[models.Model] | str,
    claim: str,
    permission: str,
    score: str | None = None,
    claim_lease: timedelta | str | float = "1h",
    resolutions: Sequence[str | tuple[str, str]] = ("resolved",),
    label: str | None = None,
    description: str = "",
) -> WorkQueue:
    """Declare a human work queue over rows of ``model``.

    - ``claim`` (required): ``"disabled"``, ``"optional"`` or ``"required"``.
    - ``score``: the id of a ``@score_rule``; items list by score (highest first), then age.
      Without one, the oldest item lists first.
    - ``claim_lease``: how long a claim lasts (``"1h"``; 10 s to 7 days); an expired claim is no
      claim, so an abandoned item returns to the queue by itself.
    - ``permission``: ``"app_label.codename"`` a user needs to see and work the queue.
    - ``resolutions``: the outcomes staff choose from when resolving (values, or
      ``(value, label)`` pairs); default one, ``"resolved"``.
    """
    what = f"Work queue {name!r}"
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise _invalid(what, "give it a name of 1-100 letters, digits or '_.-' (e.g. 'disputes').")
    model = _model(what, model)
    if claim not in CLAIM_MODES:
        raise _invalid(
            what,
            f"claim= must be one of {', '.join(repr(m) for m in CLAIM_MODES)}, got {claim!r}: "
            "state whether items need no claim, accept an optional hold, or require one.",
        )
    if score is not None and (not isinstance(score, str) or not NAME_PATTERN.match(score)):
        raise _invalid(what, f"score= must be the id of a @score_rule, got {score!r}.")
    try:
        lease = parse_duration(claim_lease, name="claim_lease=", allow_zero=False)
    except InvalidInput as error:
        raise _invalid(what, error.args[0]) from error
    if not MIN_LEASE <= lease <= MAX_LEASE:
        raise _invalid(what, "claim_lease= must be between 10 seconds and 7 days.")
    if not isinstance(permission, str) or not PERMISSION_PATTERN.match(permission):
        raise _invalid(
            what,
            f"permission= must name the permission staff need, as 'app_label.codename' (e.g. "
            f"'payments.review_dispute'), got {permission!r}.",
        )
    queue = WorkQueue(
        name=name,
        model=model,
        claim=ClaimMode(claim),
        score=score,
        claim_lease=lease,
        permission=permission,
        resolutions=_resolutions(what, resolutions),
        label=_label(what, label, name),
        description=description if isinstance(description, str) else "",
        module=_caller_module(),
    )
    return _queues.register(name, queue)


def _model(what: str, model: Any) -> type[models.Model]:
    if isinstance(model, str):
        from django.apps import apps

        try:
            return apps.get_model(model)
        except (LookupError, ValueError) as error:
            raise _invalid(
                what, f"model={model!r} is not an installed model ('app_label.ModelName')."
            ) from error
        except Exception as error:  # AppRegistryNotReady: declared outside queues.py
            raise _invalid(
                what, "declare it in an app's queues.py (imported once apps are ready)."
            ) from error
    if isinstance(model, type) and issubclass(model, models.Model) and not model._meta.abstract:
        return model
    raise _invalid(what, f"model= must be a concrete model class, got {model!r}.")


def _resolutions(what: str, resolutions: Any) -> tuple[tuple[str, str], ...]:
    if isinstance(resolutions, str) or not isinstance(resolutions, Sequence) or not resolutions:
        raise _invalid(what, "resolutions= must be a non-empty list of values or (value, label).")
    found: list[tuple[str, str]] = []
    for entry in resolutions:
        if isinstance(entry, str):
            value, text = entry, None
        elif isinstance(entry, Sequence) and len(entry) == 2:
            value, text = entry
        else:
            raise _invalid(what, f"list resolutions as values or (value, label), not {entry!r}.")
        if not isinstance(value, str) or not RESOLUTION_PATTERN.match(value):
            raise _invalid(
                what,
                f"resolution {value!r} must be 1-50 lower-case letters, digits, '_' or '-'.",
            )
        if any(value == seen for seen, _ in found):
            raise _invalid(what, f"resolution {value!r} is listed twice.")
        found.append((value, str(text) if text else value.replace("_", " ").replace("-", " ")))
    return tuple(found)


def _label(what: str, label: Any, name: str) -> str:
    if label is None:
        return name.replace("_", " ").replace("-", " ").replace(".", " ")
    if not isinstance(label, str) or not label.strip():
        raise _invalid(what, "label= must be a non-empty string when given.")
    return label.strip()


def _caller_module() -> str:
    frame = sys._getframe(2)  # work_queue()/score_rule() -> its caller
    return str(frame.f_globals.get("__name__", ""))


def get(name: str) -> WorkQueue:
    """The declared queue ``name``; ``WorkQueueNotFound`` when no installed app declares it."""
    return _queues[name]


def all_queues() -> list[WorkQueue]:
    """Every declared queue, by name."""
    return _queues.all()


def unregister(name: str) -> None:
    """Forget a queue (tests that declare queues on the fly)."""
    _queues.unregister(name)


# Discovery and checks ------------------------------------------------------------------------


def autodiscover() -> None:
    """Import every installed app's ``queues.py``, keeping invalid declarations for the checks.

    A ``DeclarationError`` does not stop Django from starting: ``manage.py check`` reports it
    (litejobs.E010), and the admin shows only the queues that were declared.
    """
    discovery.run()


def declaration_errors() -> list[tuple[str, Exception]]:
    """The declarations autodiscovery refused, as (module, error)."""
    return discovery.errors()


def unknown_rules() -> list[WorkQueue]:
    """Queues whose score rule no installed app declares (litejobs.E011)."""
    return [queue for queue in all_queues() if queue.score and queue.score not in _rules]


__all__ = [
    "CLAIM_MODES",
    "ScoreRule",
    "WorkQueue",
    "all_queues",
    "get",
    "get_rule",
    "score_rule",
    "work_queue",
]
