"""The project's ``LITEJOBS`` dict, as Django's settings hold it.

``litejobs.conf`` merges it over litejobs' defaults; the clock reads its ``CLOCK`` from here,
since the core sits below ``litejobs.conf``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from django.conf import ENVIRONMENT_VARIABLE
from django.conf import settings as django_settings


def litejobs_settings() -> Mapping[str, Any] | None:
    """The project's ``LITEJOBS`` dict (empty when unset, or when it is not a dict: the check
    litejobs.E041 reports that); ``None`` outside a Django project (no settings module: a
    script that verifies webhook signatures), where every key has its default."""
    if not django_settings.configured and ENVIRONMENT_VARIABLE not in os.environ:
        return None
    user = getattr(django_settings, "LITEJOBS", None)  # configures Django's settings
    return user if isinstance(user, Mapping) else {}
