"""System checks of reports (registered when litejobs' app is ready)."""

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig, apps
from django.conf import settings as django_settings
from django.core import checks

from ..conf import settings
from ..core.durations import format_duration
from ..exceptions import LitejobsError
from ..jobs.declarations import queue_name
from ..models.reports import LINK_TTL_MAX, link_ttl
from . import declarations

HINTS = {
    "litejobs.E080": "Fix the report declaration; only declared reports run.",
    "litejobs.E081": "Pass paging=Paging.pages(size=500), or Paging.none(reason='...') saying "
    "why the export stays small.",
    "litejobs.E082": "Pass audit=Audit(reason='...', target='...'): why the bulk read is "
    "audited and what it reads.",
    "litejobs.E083": "Name an existing permission 'app_label.codename' (a model's default "
    "view_<model> or one of its Meta.permissions).",
    "litejobs.W080": "Pass need=Need(volume=..., latency_target=..., max_result=..., "
    "operator=...): the reporting need this report answers.",
}


def _message(check_id: str, text: str, obj: str, level: type = checks.Error) -> Any:
    return level(text, hint=HINTS[check_id], obj=obj, id=check_id)


def permissions() -> set[str]:
    """Every permission the installed models define, as ``app_label.codename``."""
    found = set()
    for model in apps.get_models():
        options = model._meta
        for action in options.default_permissions:
            found.add(f"{options.app_label}.{action}_{options.model_name}")
        found.update(f"{options.app_label}.{codename}" for codename, _ in options.permissions)
    return found


@checks.register("litejobs")
def check_reports(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> Sequence[checks.CheckMessage]:
    """litejobs.E080 (a report declaration refused while importing every app's
    ``reports.py``), E081 (a report without paging), E082 (without audit), E083 (its
    permission exists on no installed model) and W080 (without its recorded need)."""
    found = [
        _message("litejobs.E080", f"{module}: {error}", module)
        for module, error in declarations.declaration_errors()
    ]
    known = permissions()
    for report in declarations.reports.all():
        found.extend(_report_problems(report, known))
    return found


def _report_problems(report: Any, known: set[str]) -> list[Any]:
    name = report.name
    found = []
    for option, check_id in (("paging", "litejobs.E081"), ("audit", "litejobs.E082")):
        if getattr(report, option) is None:
            text = f"Report {name!r} declares no {option}; it refuses every request until it does."
            found.append(_message(check_id, f"[report-{option}-missing] {text}", name))
    if report.permission is not None and report.permission not in known:
        found.append(
            _message(
                "litejobs.E083",
                f"[report-permission-unknown] Report {name!r} needs the permission "
                f"{report.permission!r}, which no installed model defines.",
                name,
            )
        )
    if report.need is None:
        found.append(
            _message(
                "litejobs.W080",
                f"[report-need-missing] Report {name!r} does not record the need it answers.",
                name,
                checks.Warning,
            )
        )
    return found


@checks.register("litejobs")
def check_report_settings(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> Sequence[checks.CheckMessage]:
    """litejobs.E084: ``REPORT_QUEUE`` is not a queue name, ``REPORT_STORAGE`` names no
    alias of ``STORAGES``, or ``REPORT_LINK_TTL`` is longer than a link may live
    (``settings-invalid``; a value that is no positive duration is litejobs.E004's)."""
    found = []
    try:
        queue_name(settings.REPORT_QUEUE, what="LITEJOBS['REPORT_QUEUE']")
    except LitejobsError as error:
        found.append(f"[settings-invalid] {error.args[0]}")
    found.extend(_link_ttl_problems())
    aliases = set(getattr(django_settings, "STORAGES", {}) or {})
    storage = settings.REPORT_STORAGE
    if not isinstance(storage, str) or storage not in aliases:
        found.append(
            f"[settings-invalid] LITEJOBS['REPORT_STORAGE']={storage!r} is not "
            f"an alias of STORAGES ({', '.join(sorted(aliases)) or 'none'})."
        )
    return [
        checks.Error(
            message,
            hint="Name the queue of the report run job (the default is 'reports'), a "
            "STORAGES alias for report outputs (the default is 'default') and a link "
            f"lifetime of at most {format_duration(LINK_TTL_MAX)} (the default is '5m').",
            id="litejobs.E084",
        )
        for message in found
    ]


def _link_ttl_problems() -> list[str]:
    try:
        settings.duration("REPORT_LINK_TTL")
    except LitejobsError:
        return []  # no positive duration: litejobs.E004 says so
    try:
        link_ttl(settings.REPORT_LINK_TTL, "LITEJOBS['REPORT_LINK_TTL']")
    except LitejobsError as error:
        return [f"[settings-invalid] {error.args[0]}"]
    return []
