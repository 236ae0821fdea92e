"""``{% litejobs_dashboard %}``: the operator's dashboard on the litejobs admin index
(``admin/litejobs/app_index.html``), drawn from ``litejobs.admin.dashboard``."""

from __future__ import annotations

from typing import Any

from django import template

from ..admin.dashboard import dashboard
from ..live.watcher import DASHBOARD_PERMISSION

register = template.Library()


@register.inclusion_tag("admin/litejobs/dashboard.html", takes_context=True)
def litejobs_dashboard(context: template.Context) -> dict[str, Any]:
    """The dashboard's context, for the admin site that draws the page; for a user who may not
    view jobs (a tenant's report user), only why it is not shown: it shows every tenant's
    queues, problems, workers and running jobs."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.has_perm(DASHBOARD_PERMISSION):
        return {"refused": True}
    site_name = getattr(request, "current_app", None) or "admin"
    return {**dashboard(site_name, user), "csrf_token": context.get("csrf_token")}
