"""The demo's staff logins, made to work exactly as ``make demo`` prints them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission


def ensure_staff(
    username: str, password: str, *, superuser: bool = False, group: Group | None = None
) -> tuple[Any, bool]:
    """The staff user ``username`` with ``password`` (in ``group``); answers it and whether it
    was created.

    An existing user keeps its row (and its history in the admin log) but gets the printed
    password and flags back, so the logins the demo announces are always the right ones.
    """
    user_model = get_user_model()
    user = user_model.objects.filter(username=username).first()
    created = user is None
    if created:
        user = user_model(username=username, email=f"{username}@example.com")
    user.is_active = True
    user.is_staff = True
    user.is_superuser = superuser
    if created or not user.check_password(password):
        user.set_password(password)
    user.save()
    if group is not None:
        user.groups.add(group)
    return user, created


def ensure_group(name: str, permissions: Iterable[tuple[str, str]]) -> Group:
    """The group ``name`` holding exactly ``permissions`` (``(app_label, codename)`` pairs),
    granted again on each run so the printed logins can do what the demo says."""
    group, _ = Group.objects.get_or_create(name=name)
    group.permissions.set(
        [
            Permission.objects.get(content_type__app_label=app, codename=codename)
            for app, codename in permissions
        ]
    )
    return group
