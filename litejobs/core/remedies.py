"""What a feature offers beside each of its problems on the dashboard: words and actions.

A feature words its own problems (its ``Feature.words``, by code): a sentence without a
command line, and the admin's own actions (a Retry or Resume button, a link to the page that
acts), each offered only to a user who may take it (``Seen.may``). The dashboard gathers
them (its ``problems`` module).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse

from .diagnostics import Problem


@dataclass(frozen=True)
class Action:
    """A link, or (with ``post``: the form's fields, name and value) a button posting to
    ``url``."""

    label: str
    url: str
    post: tuple[tuple[str, str], ...] = ()
    #: The link's class, when it is not a plain action (``problem-jobs``: the jobs it names).
    kind: str = ""


@dataclass(frozen=True)
class Seen:
    """What the words read: who looks (their permissions), the admin site, the link to a
    problem's jobs (``jobs_url``: the dashboard's), the queue rows (by name) and the
    threshold a backlog is measured against."""

    user: Any
    site: str
    jobs_url: Callable[[Problem], str]
    queues: Mapping[str, Mapping[str, Any]]
    max_ready_age: str

    def may(self, permission: str) -> bool:
        return bool(self.user.has_perm(f"litejobs.{permission}"))

    def url(self, name: str, *args: Any, query: Mapping[str, str] | None = None) -> str:
        found = reverse(f"{self.site}:litejobs_{name}", args=args)
        return f"{found}?{urlencode(query)}" if query else found

    def link(
        self,
        label: str,
        permission: str,
        name: str,
        *args: Any,
        query: Mapping[str, str] | None = None,
    ) -> Action | None:
        """A link to the admin page ``name`` for a user holding ``permission``, else none."""
        return Action(label, self.url(name, *args, query=query)) if self.may(permission) else None


#: A problem in words, and the actions beside it (``None``: one this user may not take).
Worded = tuple[str, list[Action | None]]
#: How a feature words one of its problems.
Words = Callable[[Problem, Seen], Worded]


def linked(says: str, label: str, permission: str, name: str) -> Words:
    """Words saying ``says`` (``{where}`` and ``{count}``: the problem's), with a link to the
    admin page ``name`` of what the problem is about (its ``where``) for a user holding
    ``permission``."""

    def words(problem: Problem, seen: Seen) -> Worded:
        link = seen.link(label, permission, name, problem.where) if problem.where else None
        return says.format(where=problem.where, count=problem.count), [link]

    return words
