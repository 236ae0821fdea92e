"""The columns that say which person did something."""

from typing import Any

from django.conf import settings
from django.db import models


def person() -> "models.ForeignKey[Any, Any]":
    """A user column that outlives the user: deleting them nulls it, and the name column kept
    beside it still says who it was. No index: nothing looks these rows up by user."""
    return models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )
