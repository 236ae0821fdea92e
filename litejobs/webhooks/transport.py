"""The request: a POST pinned to the addresses the policy checked, and the receiver's answer.

The connection goes to the checked address (the Host header and the TLS certificate keep the
URL's name), so a DNS answer rebound after the check never reaches another host; redirects
are not followed. ``retry_after`` reads the answer's ``Retry-After`` within bounds, so a
hostile receiver cannot park a delivery forever.
"""

from __future__ import annotations

import http.client
import re
import socket
import ssl
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

from .addresses import Target

#: Bytes of an answer's body kept as the delivery's last error.
ANSWER_KEPT = 500
#: Bytes of an answer read at most (the rest is not waited for).
ANSWER_READ = 65536
#: The longest wait a ``Retry-After`` answer may ask for (a delivery caps it at its retry
#: policy's ``max`` too).
RETRY_AFTER_MAX = timedelta(days=1)
_RETRY_SECONDS = re.compile(r"[0-9]{1,20}")


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """An HTTP connection to an address checked beforehand (the Host header keeps the name)."""

    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self.target = target

    def _open(self) -> socket.socket:
        last: OSError | None = None
        for family, sockaddr in self.target.addresses:
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.settimeout(self.timeout)
            try:
                sock.connect(sockaddr)
            except OSError as error:
                sock.close()
                last = error
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        raise last or OSError("no address to connect to")

    def connect(self) -> None:
        self.sock = self._open()


class _PinnedHTTPSConnection(_PinnedHTTPConnection):
    """The same over TLS: the certificate is checked against the URL's host name."""

    def connect(self) -> None:
        self.sock = _tls().wrap_socket(self._open(), server_hostname=self.target.host)


_tls_context: ssl.SSLContext | None = None


def _tls() -> ssl.SSLContext:
    """One verifying TLS context per process (loading the CA store once)."""
    global _tls_context
    if _tls_context is None:
        _tls_context = ssl.create_default_context()
    return _tls_context


@dataclass(frozen=True)
class Answer:
    """What the receiver answered."""

    status: int
    retry_after: str | None
    text: str


def post(target: Target, body: bytes, headers: dict[str, str], timeout: float) -> Answer:
    """POST ``body`` to the checked target; answers its status, Retry-After and body start."""
    kind = _PinnedHTTPSConnection if target.scheme == "https" else _PinnedHTTPConnection
    connection = kind(target, timeout)
    try:
        connection.request("POST", target.path, body=body, headers=headers)
        response = connection.getresponse()
        text = response.read(ANSWER_READ)[:ANSWER_KEPT].decode("utf-8", "replace")
        return Answer(response.status, response.getheader("Retry-After"), text)
    finally:
        connection.close()


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
    if _RETRY_SECONDS.fullmatch(value):
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
