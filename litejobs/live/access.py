"""Who may keep a live admin page's websocket open, read again while it stays open.

A page stays open for hours: a user who logs out, whose session expires or whose password
changes, who is deactivated or loses staff status or the page's permission meanwhile must stop
seeing it. ``Guard`` admits active staff users the page allows, then reads the session and the
user again from the database (not the connect-time user, whose permissions are cached) at most
every ``PERMISSION_RECHECK`` seconds: the session must still exist, name the same user and carry
their current auth hash (as Django's own ``get_user`` requires). A scope without a session (an
ASGI stack that authenticates otherwise) has only its user read again. The sockets run these
reads off the event loop (``litejobs.live.sockets``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib import import_module
from typing import Any

from django.conf import settings as django_settings
from django.contrib.auth import (
    BACKEND_SESSION_KEY,
    HASH_SESSION_KEY,
    SESSION_KEY,
    get_user_model,
    load_backend,
)
from django.utils.crypto import constant_time_compare

#: At most this many seconds pass between two database reads of a page's permission while it
#: receives events (a revoked user sees at most this much more).
PERMISSION_RECHECK = 5.0

#: What a page allows a signed-in staff user: e.g. a work queue's permission.
Allows = Callable[[Any], bool]


def _staff(user: Any) -> bool:
    return bool(
        user is not None
        and user.is_authenticated
        and getattr(user, "is_active", False)
        and getattr(user, "is_staff", False)
    )


def _session_pk(value: Any) -> Any:
    return get_user_model()._meta.pk.to_python(value)


def _login_session(user: Any, session: Any) -> str | None:
    """The key of the session the scope's user logged in with; None when the scope has none
    (its ASGI stack authenticates otherwise)."""
    if session is None or session.session_key is None or SESSION_KEY not in session:
        return None
    return session.session_key if _session_pk(session[SESSION_KEY]) == user.pk else None


def _session_user(session_key: str, user_pk: Any) -> Any:
    """The user ``session_key`` is still logged in as, if it is ``user_pk``: the session exists
    (not logged out, not expired), names them, and carries their current auth hash (a password
    change logs every other session out). Read without changing the session."""
    session = import_module(django_settings.SESSION_ENGINE).SessionStore(session_key)
    backend_path = session.get(BACKEND_SESSION_KEY)
    if (
        SESSION_KEY not in session
        or _session_pk(session[SESSION_KEY]) != user_pk
        or backend_path not in django_settings.AUTHENTICATION_BACKENDS
    ):
        return None
    user = load_backend(backend_path).get_user(user_pk)
    return user if user is not None and _hash_matches(user, session.get(HASH_SESSION_KEY)) else None


def _hash_matches(user: Any, stored: Any) -> bool:
    """As Django's ``get_user``: the session's hash is the user's (or a ``SECRET_KEY_FALLBACKS``
    one); a user model without session hashes has nothing to compare."""
    if not hasattr(user, "get_session_auth_hash"):
        return True
    known = [user.get_session_auth_hash(), *user.get_session_auth_fallback_hash()]
    return bool(stored) and any(constant_time_compare(stored, value) for value in known)


def current_user(user_pk: Any, session_key: str | None) -> Any:
    """The user as the database has them now: through their login session when there is one
    (None once it ended), else by primary key."""
    if session_key is None:
        return get_user_model()._default_manager.filter(pk=user_pk).first()
    return _session_user(session_key, user_pk)


class Guard:
    """One open page's user: admitted once, read again at most every ``PERMISSION_RECHECK``."""

    def __init__(self, allows: Allows) -> None:
        self.allows = allows
        self.user_pk: Any = None
        self.session_key: str | None = None
        self.checked_at = 0.0

    def allowed(self, user: Any) -> bool:
        """Whether ``user`` is signed-in active staff the page allows."""
        return _staff(user) and self.allows(user)

    def admit(self, user: Any, session: Any) -> bool:
        """Whether the scope's user may open the page; remembers them and their login session."""
        if not self.allowed(user):
            return False
        self.user_pk, self.session_key = user.pk, _login_session(user, session)
        self.checked_at = time.monotonic()
        return True

    def due(self) -> bool:
        """Whether the permission is to be read again (``PERMISSION_RECHECK`` has passed)."""
        return time.monotonic() - self.checked_at >= PERMISSION_RECHECK

    def still_allowed(self) -> bool:
        """``allowed`` for the user as the database has them now (session, flags, permissions)."""
        self.checked_at = time.monotonic()
        return self.allowed(current_user(self.user_pk, self.session_key))
