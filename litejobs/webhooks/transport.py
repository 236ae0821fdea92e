"""The request: a POST pinned to the addresses the policy checked, and the receiver's answer.

One deadline bounds the whole request, whatever the receiver's pace. The connection goes to
the checked address (the Host header and the TLS certificate keep the
URL's name), so a DNS answer rebound after the check never reaches another host; redirects
are not followed. ``retry_after`` reads the answer's ``Retry-After`` within bounds, so a
hostile receiver cannot park a delivery forever.
"""

from __future__ import annotations

import http.client
import re
import socket
import ssl
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from ..models.webhooks import Target  # the receivers' face imports no models

#: Bytes of an answer's body kept as the delivery's last error.
ANSWER_KEPT = 500
#: Bytes of an answer read at most (the rest is not waited for).
ANSWER_READ = 65536
#: The longest wait a ``Retry-After`` answer may ask for (a delivery caps it at its retry
#: policy's ``max`` too).
RETRY_AFTER_MAX = timedelta(days=1)
_DIGITS = re.compile(r"[0-9]{1,20}")


class _Deadline:
    """The instant (monotonic) by which a whole request must be over."""

    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds

    def remaining(self) -> float:
        """Seconds left; ``TimeoutError`` once none are."""
        left = self.at - time.monotonic()
        if left <= 0:
            raise TimeoutError("no answer within the delivery's deadline")
        return left


if TYPE_CHECKING:
    # Mixed into socket classes: its ``super()`` is the socket's, and the checker reads it so.
    _Socket = socket.socket
else:
    _Socket = object


class _DeadlineIO(_Socket):
    """Gives every blocking socket call only the time left before the request's deadline.

    A socket's own timeout applies to each call, so a receiver that drips a byte at a time
    could hold a request open for ever; set before each call, the timeout is what is left.
    """

    deadline: _Deadline | None = None

    def _bounded(self) -> None:
        if self.deadline is not None:
            self.settimeout(self.deadline.remaining())

    def recv_into(self, *args: Any, **kwargs: Any) -> int:
        self._bounded()
        return super().recv_into(*args, **kwargs)

    def recv(self, *args: Any, **kwargs: Any) -> bytes:
        self._bounded()
        return super().recv(*args, **kwargs)

    def sendall(self, *args: Any, **kwargs: Any) -> None:
        self._bounded()
        super().sendall(*args, **kwargs)


class _DeadlineSocket(_DeadlineIO, socket.socket):
    pass


class _DeadlineSSLSocket(_DeadlineIO, ssl.SSLSocket):
    pass


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """An HTTP connection to an address checked beforehand (the Host header keeps the name),
    every step of which (connect, TLS, request, answer) ends by one deadline."""

    def __init__(self, target: Target, deadline: _Deadline) -> None:
        super().__init__(target.host, target.port, timeout=deadline.remaining())
        self.target = target
        self.deadline = deadline

    def _open(self) -> socket.socket:
        last: OSError | None = None
        for family, sockaddr in self.target.addresses:
            sock = _DeadlineSocket(family, socket.SOCK_STREAM)
            try:
                sock.settimeout(self.deadline.remaining())
                sock.connect(sockaddr)
            except OSError as error:
                sock.close()
                last = error
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.deadline = self.deadline
            return sock
        raise last or OSError("no address to connect to")

    def connect(self) -> None:
        self.sock = self._open()


class _PinnedHTTPSConnection(_PinnedHTTPConnection):
    """The same over TLS: the certificate is checked against the URL's host name."""

    def connect(self) -> None:
        raw = self._open()
        # The handshake is one call, bounded by the timeout it starts with.
        raw.settimeout(self.deadline.remaining())
        tls = cast(_DeadlineSSLSocket, _tls().wrap_socket(raw, server_hostname=self.target.host))
        tls.deadline = self.deadline
        self.sock = tls


_tls_context: ssl.SSLContext | None = None


def _tls() -> ssl.SSLContext:
    """One verifying TLS context per process (loading the CA store once)."""
    global _tls_context
    if _tls_context is None:
        context = ssl.create_default_context()
        context.sslsocket_class = _DeadlineSSLSocket
        _tls_context = context
    return _tls_context


@dataclass(frozen=True)
class Answer:
    """What the receiver answered: its status, ``Retry-After``, content type and length (the
    ``Content-Length`` it declared, else the bytes read), and the start of its body."""

    status: int
    retry_after: str | None
    text: str
    content_type: str = ""
    length: int = 0


def post(target: Target, body: bytes, headers: dict[str, str], timeout: float) -> Answer:
    """POST ``body`` to the checked target; answers its status, Retry-After, content type,
    length and body start (``ANSWER_KEPT`` bytes; the caller decides whether to keep them).

    ``timeout`` bounds the whole request — connecting, the TLS handshake, sending, the
    answer's headers and the part of its body read — however slowly the receiver answers;
    past it, ``TimeoutError``.
    """
    kind = _PinnedHTTPSConnection if target.scheme == "https" else _PinnedHTTPConnection
    connection = kind(target, _Deadline(timeout))
    try:
        connection.request("POST", target.path, body=body, headers=headers)
        response = connection.getresponse()
        read = response.read(ANSWER_READ)
        return Answer(
            response.status,
            response.getheader("Retry-After"),
            read[:ANSWER_KEPT].decode("utf-8", "replace"),
            content_type=(response.getheader("Content-Type") or "")[:100],
            length=_declared_length(response.getheader("Content-Length"), len(read)),
        )
    finally:
        connection.close()


def _declared_length(header: str | None, read: int) -> int:
    """The answer's length: its ``Content-Length`` when that is a plain number, else the bytes
    read (at most ``ANSWER_READ``)."""
    if header is not None and _DIGITS.fullmatch(header.strip()):
        return int(header.strip())
    return read


def retry_after(
    value: str | None, now: datetime, *, cap: timedelta = RETRY_AFTER_MAX
) -> timedelta | None:
    """A ``Retry-After`` value (ASCII seconds, or an HTTP date) as a delay from ``now``, at
    most ``cap`` (and at most ``RETRY_AFTER_MAX``); ``None`` for anything else, which the
    retry policy's backoff then replaces. A hostile receiver cannot park a delivery forever."""
    if not value:
        return None
    value = value.strip()
    cap = min(cap, RETRY_AFTER_MAX)
    if _DIGITS.fullmatch(value):
        seconds = int(value)
        return cap if seconds >= cap.total_seconds() else timedelta(seconds=seconds)
    if not value.isascii() or len(value) > 64:
        return None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    try:
        wait = when - now
    except OverflowError:
        return cap
    return min(max(wait, timedelta(0)), cap)
