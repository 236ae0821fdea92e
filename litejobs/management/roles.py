"""The "litejobs read-only" group: every litejobs admin page to read, nothing to change.

Migration 0016 creates it with the view permissions litejobs had then; ``sync_read_only_group``
runs after every ``migrate`` (post_migrate) and sets its permissions to exactly litejobs' view
permissions, so models a later release adds are readable too and nothing else creeps in.
Admin actions and litejobs' own POST pages (queue pause, work queues, report requests) check
the model's ``change`` permission (or a custom one), which the group never holds.
"""

from __future__ import annotations

from typing import Any

#: The group's name, as operators find it in the admin's groups.
READ_ONLY_GROUP = "litejobs read-only"


def sync_read_only_group(sender: Any, using: str = "default", **kwargs: Any) -> None:
    """post_migrate: the group (created if missing) holds litejobs' view permissions only."""
    from django.contrib.auth.models import Group, Permission
    from django.db import DatabaseError

    if getattr(sender, "label", None) != "litejobs":
        return
    try:
        group, _ = Group.objects.using(using).get_or_create(name=READ_ONLY_GROUP)
        group.permissions.set(
            Permission.objects.using(using).filter(
                content_type__app_label="litejobs", codename__startswith="view_"
            )
        )
    except DatabaseError:
        return  # auth's tables are not in this database (a router keeps them elsewhere)
