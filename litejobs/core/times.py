"""How admin pages and messages write an instant: one format everywhere.

To the second, in the current time zone, named (``13:00:05 UTC``); with the day too when the
instant is not within hours of now (``02 Mar 13:00:05 UTC``). The work-queue page's script
writes live changes the same way (``workqueue.js``), so a claim reads alike in a row, in the
message that refused an action on it, and on the item's own page; the job listing writes its
times so too, the full timestamp in a tooltip (``full``); ``ago`` says how far from now, beside
it where that helps (an audit row, a pause).
"""

from __future__ import annotations

from datetime import datetime, timedelta, tzinfo

from django.utils import timezone

from . import clock
from .durations import format_age

#: Instants further than this from now show their day too.
DATE_AFTER = timedelta(hours=20)


def zone_label() -> str:
    """The current time zone as times are suffixed with it (``UTC``, ``CET``)."""
    return timezone.localtime(clock.now()).strftime("%Z") or timezone.get_current_timezone_name()


def when(
    instant: datetime | None, now: datetime | None = None, *, zone: tzinfo | None = None
) -> str:
    """``13:00:05 UTC``; ``02 Mar 13:00:05 UTC`` when not within hours of ``now`` (the
    clock's now when not given); ``?`` for no instant. In ``zone`` when given (a schedule's
    own), else in the current time zone."""
    if instant is None:
        return "?"
    now = clock.now() if now is None else now
    local = instant.astimezone(zone) if zone is not None else timezone.localtime(instant)
    shape = "%d %b %H:%M:%S %Z" if abs(instant - now) >= DATE_AFTER else "%H:%M:%S %Z"
    return local.strftime(shape)


def ago(instant: datetime, now: datetime | None = None) -> str:
    """How far from now, beside an instant where it helps: ``4m 10s ago``, ``in 2h``."""
    now = clock.now() if now is None else now
    if instant <= now:
        return f"{format_age(now - instant)} ago"
    return f"in {format_age(instant - now)}"


def full(instant: datetime) -> str:
    """The whole instant, in the current time zone: ``2026-03-02 13:00:05.123456 UTC``."""
    return timezone.localtime(instant).strftime("%Y-%m-%d %H:%M:%S.%f %Z")
