"""Triggers that keep an audit trail append-only: its rows are written once and never deleted.

A trail is the record of who did what (a bulk money confirmation, an operator's action, a
report read). Code that would rewrite or remove a row is a bug, and the database refuses it
whoever asks, the admin's superusers and a raw SQL session included. The person column stays
writable: deleting a user nulls it, and the name kept beside it still says who it was.
"""

import pgtrigger

from .triggers import refuse


def no_delete(name: str, message: str) -> pgtrigger.Trigger:
    """A trigger refusing every ``DELETE`` of the table's rows with ``message``."""
    return refuse(name, pgtrigger.Delete, message)


def append_only(table: str, noun: str) -> list[pgtrigger.Trigger]:
    """The triggers of a trail table: no row changes (but its person column) and none is
    deleted. ``noun`` names the rows in the refusal ("operator actions")."""
    return [
        pgtrigger.ReadOnly(name=f"{table}_frozen", exclude=["user"]),
        no_delete(f"{table}_kept", f"litejobs: {noun} are an audit trail and are never deleted"),
    ]
