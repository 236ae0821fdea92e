"""``manage.py litejobs report list|show|cancel|explain``: reports and their runs from the
command line.

``report list`` reads every declared report with its limits as they count now (its setting
row, seeded from the declaration on first read) and its queued and running runs; ``report
show`` reads one run; ``report cancel`` cancels one, logged with ``--by`` and ``--reason``
(``litejobs.reports.operations``); ``report explain`` prints the query plan of a report's first
read (``litejobs.reports.explaining``), for the review a report gets before it ships. A
refusal prints ``[code] message`` and exits 1: ``report-unknown`` (no report of that name, no
run of that id), ``report-not-cancellable`` (the run has ended), ``report-tenant-unknown`` (an
``explain --tenant`` the report knows nothing of) and the parameter codes of ``report
explain``; ``--params`` that is not a JSON object exits 2 (``report-params-not-json``).
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.db.models import Count

from ..cli import EXIT_OK, EXIT_USAGE, add_json_flag, emit, refuse
from ..cli.jobs import acting_user, add_by_flag, add_reason_flag, iso, row_id
from ..conf import settings
from ..core.durations import format_duration
from ..core.enums import REPORT_LIVE, PagingMode, ReportState
from ..core.sizes import format_size
from ..jobs.actionlog import Actor
from ..models import ReportLimits, ReportRun
from . import explaining, limits, operations
from .declarations import Declaration, reports
from .errors import ReportNotFound
from .params import stored

if TYPE_CHECKING:
    from django.core.management.base import BaseCommand

    from ..cli import Subparsers

logger = logging.getLogger(__name__)

#: The code of ``--params`` that is not a JSON object (a bad usage: exit 2).
PARAMS_NOT_JSON = "report-params-not-json"
PARAMS_EXAMPLE = '{"start": "2026-01-01", "end": "2026-01-31", "status": "paid"}'

_run_id = row_id("run")


def register(subparsers: Subparsers) -> None:
    """Add ``report list|show|cancel|explain``."""
    parser = subparsers.add_parser(
        "report", help="Reports and their runs (list, show, cancel, explain)."
    )
    verbs = parser.add_subparsers(
        dest="report_verb", metavar="list|show|cancel|explain", required=True
    )
    listed = verbs.add_parser(
        "list",
        help="Every declared report: format, paging, permission, need, limits, live runs.",
    )
    add_json_flag(listed)
    listed.set_defaults(handler=handle_list)

    show = verbs.add_parser(
        "show", help="A report run: state, parameters, requester, progress, output, why it stopped."
    )
    show.add_argument("run_id", type=_run_id, help="The run's id (the admin's report runs).")
    add_json_flag(show)
    show.set_defaults(handler=handle_show)

    cancel = verbs.add_parser(
        "cancel", help="Cancel a queued or running report run: it stops and offers nothing."
    )
    cancel.add_argument("run_id", type=_run_id, help="The run's id (the admin's report runs).")
    add_by_flag(cancel)
    add_reason_flag(cancel)
    add_json_flag(cancel)
    cancel.set_defaults(handler=handle_cancel)

    explain = verbs.add_parser(
        "explain", help="The query plan of a report's first read, for review before it ships."
    )
    explain.add_argument("name", help="The report's declared name, such as shop.orders.")
    explain.add_argument(
        "--params",
        help=f"A request's parameters as a JSON object, such as '{PARAMS_EXAMPLE}' (default: "
        "the longest range the report's limits allow, ending today).",
    )
    explain.add_argument(
        "--tenant", help="The tenant to plan for (default: the tenant of the report's latest run)."
    )
    add_json_flag(explain)
    explain.set_defaults(handler=handle_explain)


# list --------------------------------------------------------------------------------------


def _duration(value: timedelta | None) -> str | None:
    return format_duration(value) if value is not None else None


def limits_of(row: ReportLimits) -> dict[str, Any]:
    """A report's setting row as JSON values (durations as people write them)."""
    return {
        "max_range": _duration(row.max_range),
        "max_rows": row.max_rows,
        "max_seconds": _duration(row.max_seconds),
        "max_concurrent": row.max_concurrent,
        "max_bytes": row.max_bytes,
        "lifetime": _duration(row.lifetime),
        "request_budget": row.request_budget,
        "updated_at": iso(row.updated_at),
        "updated_by": row.updated_by,
    }


def _paging(declaration: Declaration) -> dict[str, Any] | None:
    paging = declaration.paging
    if paging is None:
        return None
    if paging.mode is PagingMode.PAGES:
        return {"mode": str(paging.mode), "size": paging.size}
    return {"mode": str(paging.mode), "reason": paging.reason}


def _need(declaration: Declaration) -> dict[str, Any] | None:
    need = declaration.need
    if need is None:
        return None
    return {
        "volume": need.volume,
        "latency_target": _duration(need.latency_target),
        "max_result": need.max_result,
        "operator": need.operator,
    }


def summary(declaration: Declaration, live: dict[tuple[str, str], int]) -> dict[str, Any]:
    """One report as ``report list`` shows it; ``live`` counts runs by (report, state)."""
    audit = declaration.audit
    return {
        "name": declaration.name,
        "module": declaration.module,
        "format": str(declaration.format),
        "encoding": declaration.encoding,
        "bom": declaration.bom,
        "columns": list(declaration.columns),
        "filters": list(declaration.filters),
        "paging": _paging(declaration),
        "audit": {"reason": audit.reason, "target": audit.target} if audit else None,
        "permission": declaration.permission,
        "need": _need(declaration),
        "limits": limits_of(limits.current(declaration)),
        "runs": {str(state): live.get((declaration.name, state), 0) for state in REPORT_LIVE},
    }


def _live_runs() -> dict[tuple[str, str], int]:
    counted = (
        ReportRun.objects.using(settings.DATABASE)
        .filter(state__in=REPORT_LIVE)
        .values_list("report", "state")
        .annotate(count=Count("id"))
    )
    return {(report, state): count for report, state, count in counted}


def _paging_text(paging: dict[str, Any] | None) -> str:
    if paging is None:
        return "NO PAGING (litejobs.E081)"
    if paging["mode"] == PagingMode.PAGES:
        return f"pages of {paging['size']:,}"
    return f"one query ({paging['reason']})"


def _limits_text(row: dict[str, Any]) -> str:
    return (
        f"max_range {row['max_range'] or '-'}, max_rows {row['max_rows']:,}, "
        f"max_seconds {row['max_seconds']}, max_concurrent {row['max_concurrent']}, "
        f"max_bytes {format_size(row['max_bytes'])}, lifetime {row['lifetime']}, "
        f"request_budget {row['request_budget']:,}"
    )


def _audit_text(audit: dict[str, Any] | None) -> str:
    return f"{audit['reason']} (reads {audit['target']})" if audit else "NONE (litejobs.E082)"


def _need_text(need: dict[str, Any] | None) -> str:
    if need is None:
        return "not recorded (litejobs.W080)"
    return (
        f"volume {need['volume']}, latency {need['latency_target']}, max_result "
        f"{need['max_result']}, operator {need['operator']}"
    )


def _summary_text(report: dict[str, Any]) -> str:
    row, runs = report["limits"], report["runs"]
    return "\n".join(
        [
            f"{report['name']}  ({report['format']}, {_paging_text(report['paging'])}; "
            f"declared in {report['module']})",
            f"  permission  {report['permission'] or 'any signed-in user'}",
            f"  audit       {_audit_text(report['audit'])}",
            f"  need        {_need_text(report['need'])}",
            f"  limits      {_limits_text(row)}",
            f"              (set by {row['updated_by'] or '-'} at {row['updated_at']})",
            f"  runs        {runs['running']} running, {runs['queued']} queued",
        ]
    )


def handle_list(command: BaseCommand, options: dict[str, Any]) -> int:
    """``report list``: every declared report with its limits and live runs."""
    live = _live_runs()
    found = [summary(declaration, live) for declaration in reports.all()]
    text = "\n\n".join(map(_summary_text, found)) or "No installed app declares a report."
    emit(command, options, found, text)
    return EXIT_OK


# show --------------------------------------------------------------------------------------


def get_run(run_id: int) -> ReportRun:
    """The run of that id, or ``ReportNotFound`` (``report-unknown``)."""
    run = ReportRun.objects.using(settings.DATABASE).filter(pk=run_id).first()
    if run is None:
        raise ReportNotFound(f"No report run has id {run_id}; the admin's report runs list them.")
    return run


def run_details(run: ReportRun) -> dict[str, Any]:
    """Every column of the run as JSON values."""
    data: dict[str, Any] = {}
    for field in ReportRun._meta.concrete_fields:
        value = getattr(run, field.attname)
        data[field.attname] = iso(value) if isinstance(value, datetime) else value
    return data


def _show_text(data: dict[str, Any], progress: str) -> str:
    state = data["state"]
    if state in REPORT_LIVE:
        state += f", {progress}"
    lines = [f"Report run #{data['id']}  {data['report']}  ({state})"]
    shown = {
        "requester": data["requester_name"] or "-",
        "tenant": data["tenant"] or "-",
        "parameters": json.dumps(data["parameters"], sort_keys=True),
        "format": data["format"],
        "rows": f"{data['row_count']:,}",
        "bytes": f"{format_size(data['bytes'])} in {data['parts']} parts",
        "output": f"{data['storage']}:{data['output_path'] or '-'}",
        "job": data["job_id"] or "-",
    }
    for name in ("created_at", "started_at", "finished_at", "expires_at", "removed_at"):
        shown[name.replace("_at", "")] = data[name] or "-"
    lines += [f"  {name:<11} {value}" for name, value in shown.items()]
    if data["cancelled_by"]:
        lines.append(f"  {'cancelled':<11} by {data['cancelled_by']}")
    if data["stop_reason"] or data["error"]:
        lines.append(f"  {'stopped':<11} [{data['stop_reason'] or '-'}] {data['error']}")
    if data["state"] in REPORT_LIVE:
        lines.append(f"to cancel it: manage.py litejobs report cancel {data['id']} --by WHO")
    return "\n".join(lines)


def handle_show(command: BaseCommand, options: dict[str, Any]) -> int:
    """``report show RUN_ID``: every column of the run."""
    run = get_run(options["run_id"])
    data = run_details(run)
    emit(command, options, data, _show_text(data, run.progress_text()))
    return EXIT_OK


# cancel ------------------------------------------------------------------------------------


def handle_cancel(command: BaseCommand, options: dict[str, Any]) -> int:
    """``report cancel RUN_ID``: ``ReportRun.cancel``; a run that has ended is refused."""
    run = get_run(options["run_id"])
    was, by, reason = run.state, acting_user(options), options.get("reason") or ""
    operations.cancel(run, Actor(by, None, reason))
    logger.info(
        "report run cancelled id=%s report=%s was=%s by=%s reason=%s",
        run.pk,
        run.report,
        was,
        by,
        reason or "-",
    )
    then = (
        "its worker stops it at its next page and removes what it wrote"
        if was == ReportState.RUNNING
        else "it will not run"
    )
    data = {
        "id": run.pk,
        "report": run.report,
        "was": was,
        "state": run.state,
        "cancelled_by": run.cancelled_by,
        "reason": reason,
    }
    message = f"Report run #{run.pk} of {run.report} is cancelled (it was {was}): {then}."
    emit(command, options, data, message)
    return EXIT_OK


# explain -----------------------------------------------------------------------------------


def _given(text: str) -> dict[str, Any]:
    """``--params`` as a dict, or ``ValueError`` saying what a JSON object looks like."""
    try:
        given = json.loads(text)
    except ValueError:
        given = None
    if not isinstance(given, dict):
        raise ValueError(
            f"--params is a JSON object of the report's parameters, such as '{PARAMS_EXAMPLE}'; "
            f"got {text[:80]!r}."
        )
    return given


def handle_explain(command: BaseCommand, options: dict[str, Any]) -> int:
    """``report explain NAME``: the plan of the report's first read, with ``--params`` and
    ``--tenant`` or else representative ones."""
    declaration = reports[options["name"]]
    try:
        given = _given(options["params"]) if options.get("params") is not None else None
    except ValueError as error:
        refuse(command, bool(options.get("json")), PARAMS_NOT_JSON, str(error))
        return EXIT_USAGE
    tenant = options.get("tenant")
    usual, latest = explaining.representative(declaration)
    given = usual if given is None else given
    if tenant is not None:
        explaining.check_tenant(declaration, given, tenant)
    else:
        tenant = latest
        if declaration.tenant is not None and not latest:
            command.stderr.write(
                f"No run of {declaration.name} yet names a tenant: planning for the empty "
                "tenant; pass --tenant for a real one."
            )
    plan = explaining.explain(declaration, given, tenant)
    data = {
        "report": declaration.name,
        "parameters": stored(given),
        "tenant": tenant,
        "plan": plan,
    }
    text = (
        f"Plan of {declaration.name}'s first read for tenant {tenant!r}, parameters "
        f"{json.dumps(data['parameters'], sort_keys=True)}:\n" + "\n".join(plan)
    )
    emit(command, options, data, text)
    return EXIT_OK
