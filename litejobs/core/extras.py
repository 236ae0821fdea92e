"""The optional packages behind litejobs' extras, and the error naming the one to install.

The core (jobs, schedules, the outbox, webhooks, the admin) needs only Django, psycopg,
django-pgtrigger and croniter. Live admin pages (the work queues, the dashboard) need channels
(``litejobs[live]``), bulk money actions django-otp (``litejobs[otp]``), the metrics view
prometheus-client (``litejobs[metrics]``), OpenTelemetry spans opentelemetry-api
(``litejobs[otel]``: without it ``litejobs.core.otel`` does nothing); ``litejobs[all]`` brings
every one.
"""

from __future__ import annotations

from importlib.util import find_spec

from .errors import ExtraMissing


def installed(module: str) -> bool:
    """Whether ``module`` (a top-level package such as ``channels``) can be imported."""
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing(extra: str, module: str, feature: str) -> ExtraMissing:
    """The error of ``feature`` used without ``module``: install ``litejobs[extra]``."""
    return ExtraMissing(
        f"{feature} needs {module}, which is not installed: "
        f'pip install "litejobs[{extra}]" (or "litejobs[all]").'
    )


def require(extra: str, module: str, feature: str) -> None:
    """Raise ``ExtraMissing`` unless ``module`` is installed."""
    if not installed(module):
        raise missing(extra, module, feature)
