"""The job listing's payload filter: jobs whose payload holds a typed value, matched by JSON
containment, over the payloads of the jobs whose pages show that field."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.db.models import Q, QuerySet
from django.http import HttpRequest

from ..exceptions import InvalidInput, LitejobsError
from ..jobs import catalog
from .jobfilters import NAME, InputFilter, by_life

#: A payload path deeper than this is refused (no payload the app writes nests so deep).
PAYLOAD_DEPTH = 8
PAYLOAD_LENGTH = 500


class PayloadFilter(InputFilter):
    """Jobs whose payload holds a value: ``field=value`` or a path ``a.b=value``.

    Matched with JSON containment (``payload @> {...}``, the value bound as a parameter): the
    typed text never becomes SQL. A value that reads as JSON (``5``, ``true``, ``"5"``) is
    matched as that JSON value; an unquoted one also as the text it is, so ``order=5``
    finds ``{"order": 5}`` and ``{"order": "5"}``.

    It searches only payloads whose field the job pages show: a match on a field they redact
    would confirm the hidden value. With a job chosen, a field it declares ``sensitive=`` is
    refused (``listing-filter-sensitive``); without, every job an installed app declares is
    searched but those hiding the field, which a warning names.
    """

    title = "payload"
    boxes = (("payload", "field=value", "text", "customer.id=42"),)

    #: The job the list is filtered to (its job filter): its declaration says what is hidden.
    job_name = ""
    #: The typed field and the jobs not searched because their pages hide it.
    unsearched: tuple[str, list[str]] | None = None

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any] | None:
        """The matching jobs; a warning names the jobs left unsearched (their pages hide the
        field)."""
        self.job_name = request.GET.get(NAME, "")
        matched = super().queryset(request, queryset)
        if self.unsearched is not None:
            messages.warning(
                request, _unsearched(*self.unsearched), extra_tags="listing-filter-sensitive"
            )
        return matched

    def match(self, values: dict[str, str]) -> Q:
        """Containment of the typed value at the typed path (either of its readings), in the
        payloads of the jobs whose pages show that field."""
        path, wanted = _payload_condition(values["payload"])
        documents = []
        for value in wanted:
            document: Any = value
            for field in reversed(path):
                document = {field: document}
            documents.append(document)
        searched, hiding = _searched(path, documents[0], self.job_name)
        if hiding:
            self.unsearched = (".".join(path), hiding)
        return by_life(*(Q(payload__contains=d, name__in=searched) for d in documents))


def _searched(
    path: list[str], document: dict[str, Any], job_name: str
) -> tuple[list[str], list[str]]:
    """The jobs (``job_name``, else every declared job) whose pages show the value at ``path``
    of a payload like ``document``, and those whose pages hide it. A chosen job that hides it
    is refused (``listing-filter-sensitive``).

    A job hides the fields its declaration (and an add-on, for this payload) names
    ``sensitive=``, everything inside them, and every field of a job no installed app declares.
    A path that holds a hidden field (``card`` of a hidden ``card.number``) is hidden too: a
    typed object would match it.
    """
    if job_name:
        try:
            definitions = [catalog.get(job_name)]
        except LitejobsError:
            raise _hidden(
                path,
                f"no installed app declares job {job_name[:80]!r}, so its pages hide every "
                "value of its payload",
            ) from None
    else:
        definitions = list(catalog.all_jobs())
    searched: list[str] = []
    hiding: list[str] = []
    for definition in definitions:
        hidden = catalog.sensitive_of(definition, document)
        (hiding if any(_overlap(path, f) for f in hidden) else searched).append(definition.name)
    if job_name and hiding:
        raise _hidden(path, f"job {job_name[:80]} declares it sensitive=, so its pages redact it")
    return ([job_name] if job_name else searched), sorted(hiding)


def _unsearched(field: str, jobs: list[str]) -> str:
    shown = ", ".join(jobs[:3]) + (f" and {len(jobs) - 3} more jobs" if len(jobs) > 3 else "")
    return (
        f"Not searched: {shown}, whose pages show the payload field {field[:80]!r} redacted "
        "(declared sensitive=): a match would confirm the value they hide."
    )


def _overlap(path: list[str], field: str) -> bool:
    """Whether ``path`` lies inside the (dotted) ``field`` or holds it."""
    parts = field.split(".")
    shared = min(len(path), len(parts))
    return path[:shared] == parts[:shared]


def _hidden(path: list[str], why: str) -> InvalidInput:
    return InvalidInput(
        f"The payload field {'.'.join(path)[:80]!r} cannot be filtered on: {why}, and a match "
        "would confirm the value they hide. Filter on a field the job's page shows, such as an "
        "order or customer id.",
        code="listing-filter-sensitive",
    )


def _payload_condition(text: str) -> tuple[list[str], list[Any]]:
    """The path and the values ``text`` (``a.b=value``) asks for; malformed: refused."""
    path_text, equals, value_text = text.partition("=")
    path = path_text.strip().split(".")
    if (
        not equals
        or len(text) > PAYLOAD_LENGTH
        or len(path) > PAYLOAD_DEPTH
        or not all(field.strip() for field in path)
    ):
        raise InvalidInput(
            f"The payload filter {text[:80]!r} is not field=value: type a field name (or a "
            f"path of up to {PAYLOAD_DEPTH} names joined by dots, like customer.id), an "
            "equals sign and the value, e.g. customer.id=42.",
            code="listing-filter-invalid",
        )
    path = [field.strip() for field in path]
    value_text = value_text.strip()
    try:
        parsed = json.loads(value_text, parse_constant=_no_constant, parse_float=_finite)
    except ValueError:
        return path, [value_text]
    return path, [parsed] if isinstance(parsed, str) else [parsed, value_text]


def _no_constant(name: str) -> Any:
    """``NaN`` and ``Infinity`` are no JSON values: such a value is matched as text."""
    raise ValueError(name)


def _finite(text: str) -> float:
    """A number too large for a float (``1e999``) is matched as text."""
    number = float(text)
    if number in (float("inf"), float("-inf")):
        raise ValueError(text)
    return number
