"""Where a file's records end, found on its bytes: ``Scanner`` cuts a CSV or NDJSON file into
records from any byte offset, quote-aware for CSV (as the ``csv`` module reads it), holding at
most one record and one chunk, so an import resumes where a page ended and a record longer than
the limit is scanned to its end without being kept."""

from __future__ import annotations

import codecs
import enum
import re
from typing import Protocol

_BOM = codecs.BOM_UTF8
_QUOTE = ord('"')
_NEWLINE = ord("\n")
_CR = ord("\r")


class SeekableBytes(Protocol):
    """What the reader needs of a file: what ``storage.open(name, "rb")`` answers."""

    def read(self, size: int, /) -> bytes:
        """At most ``size`` bytes; none at the end of the file."""

    def seek(self, offset: int, /) -> int:
        """Move to the byte ``offset`` from the start."""


class _State(enum.Enum):
    """Where a CSV scan stands: what the next quote or newline means."""

    #: At a record's first byte, or just after a quote inside quotes: a quote (re-)opens quotes
    #: (``""`` inside quotes is a quote of the data); anything else is outside quotes.
    EDGE = enum.auto()
    #: Outside quotes: a newline ends the record; a quote opens quotes only after a comma (else
    #: it is data, as the ``csv`` module reads it).
    OUT = enum.auto()
    #: Inside quotes: everything is data up to a quote that is not doubled.
    QUOTED = enum.auto()


#: Bytes inside quotes up to the closing quote: ``""`` is a quote of the data.
_QUOTED = rb'[^"]*+(?:""[^"]*+)*+'
_QUOTED_RUN = re.compile(_QUOTED)
#: A quoted field, whole.
_QUOTED_FIELD = rb'"' + _QUOTED + rb'"'
#: Bytes outside quotes, and quoted fields whole, up to a newline or a comma whose quoted field
#: does not close in the buffer (a comma or a closing quote at the buffer's end is left: the
#: byte after it tells).
_OUT_RUN = re.compile(rb"(?:[^,\n]++|," + _QUOTED_FIELD + rb'(?=[^"])|,(?=[^"]))*+')
#: A whole record and its newline, as ``_scan_csv`` reads it from ``_State.EDGE``; no match
#: when its end is not in the buffer.
_CSV_RECORD = re.compile(
    rb"(?:" + _QUOTED_FIELD + rb')?+(?!")(?:[^,\n]++|,' + _QUOTED_FIELD + rb'|,(?!"))*+\n'
)


def _run(pattern: re.Pattern[bytes], buf: bytearray, i: int) -> int:
    """Where a run of ``pattern`` from ``i`` ends (its patterns may match nothing)."""
    match = pattern.match(buf, i)
    return match.end() if match else i


def _scan_csv(buf: bytearray, state: _State, i: int) -> tuple[_State, int, bool]:
    """Scan ``buf`` from ``i`` in ``state`` as the ``csv`` module reads it: answer the index of
    the newline that ends the record (and True), or the state and index to go on from once
    more bytes came (and False); the bytes before that index are no longer needed."""
    size = len(buf)
    while True:
        if state is _State.EDGE:
            if i >= size:
                return state, i, False
            state, i = (_State.QUOTED, i + 1) if buf[i] == _QUOTE else (_State.OUT, i)
        elif state is _State.QUOTED:
            i = _run(_QUOTED_RUN, buf, i)
            if i >= size:
                return state, i, False
            state, i = _State.EDGE, i + 1
        else:
            i = _run(_OUT_RUN, buf, i)
            if i < size and buf[i] == _NEWLINE:
                return state, i, True
            if i + 1 >= size:  # the end, or a comma the next byte may quote
                return state, i, False
            state, i = _State.QUOTED, i + 2  # a comma and a quote


def _scan_lines(buf: bytearray, state: _State, i: int) -> tuple[_State, int, bool]:
    """Like ``_scan_csv`` for NDJSON: a record ends at the next newline."""
    newline = buf.find(b"\n", i)
    return (state, newline, True) if newline >= 0 else (state, len(buf), False)


#: A record as the scan cut it: its offset, its line, its bytes without the line ending (None
#: when longer than the limit: they were not kept), and whether the file ended inside quotes.
#: A plain tuple: a page makes thousands.
Raw = tuple[int, int, bytearray | None, bool]


class Scanner:
    """Cuts a file into records from a byte offset, holding at most one record and one chunk."""

    def __init__(
        self, file: SeekableBytes, *, csv: bool, start: int, line: int, limit: int, chunk: int
    ) -> None:
        file.seek(start)
        self._file = file
        self._csv = csv
        self._scan = _scan_csv if self._csv else _scan_lines
        self._first = _State.EDGE if self._csv else _State.OUT
        self._limit = limit
        self._chunk = chunk
        self._buf = bytearray()
        self._base = start  # the offset of _buf[0]
        self._pos = 0  # where the next record starts in _buf
        self._eof = False
        #: The physical line at ``offset``.
        self.line = line
        if start == 0:
            self._skip_bom()

    @property
    def offset(self) -> int:
        """The byte offset where the next record starts."""
        return self._base + self._pos

    def _skip_bom(self) -> None:
        while len(self._buf) < len(_BOM) and self._read():
            pass
        if self._buf.startswith(_BOM):
            self._pos = len(_BOM)

    def _read(self) -> bool:
        """Append one chunk, first dropping the bytes before ``_pos``: False at the file's end."""
        chunk = b"" if self._eof else self._file.read(self._chunk)
        if not chunk:
            self._eof = True
            return False
        del self._buf[: self._pos]
        self._base += self._pos
        self._pos = 0
        self._buf += chunk
        return True

    def take(self, size: int) -> list[Raw]:
        """Up to ``size`` records: fewer when the file ends."""
        raws: list[Raw] = []
        while len(raws) < size:
            if self._lines(raws, size):
                continue
            raw = self.next()
            if raw is None:
                break
            raws.append(raw)
        return raws

    def _lines(self, raws: list[Raw], size: int) -> bool:
        """Take the records ahead in the buffer up to the next quote, up to ``size`` in
        ``raws``: without a quote a record is one line, and lines are cut all at once. False
        when there is no whole line ahead."""
        buf, start = self._buf, self._pos
        quote = buf.find(b'"', start) if self._csv else -1
        last = buf.rfind(b"\n", start, len(buf) if quote < 0 else quote)
        if last < 0:
            return False
        offset, line, limit = self.offset, self.line, self._limit
        for data in buf[start:last].split(b"\n"):
            end = offset + len(data) + 1
            if data.endswith(b"\r"):
                del data[-1]
            if data:
                raws.append((offset, line, data if len(data) <= limit else None, False))
            offset, line = end, line + 1
            if len(raws) == size:
                break
        self._pos, self.line = offset - self._base, line
        return True

    def next(self) -> Raw | None:
        """The next record, blank lines skipped (and counted); None at the end of the file."""
        while self._pos < len(self._buf) or self._read():
            raw = self._whole() or self._record()
            if raw[2] is None or raw[2]:  # else a blank line
                return raw
        return None

    def _whole(self) -> Raw | None:
        """The next record when it is whole in the buffer: found with a search or two instead
        of a scan; else None."""
        buf, start = self._buf, self._pos
        newline = buf.find(b"\n", start)
        if newline >= 0 and self._csv and buf.find(b'"', start, newline) >= 0:
            match = _CSV_RECORD.match(buf, start)
            newline = match.end() - 1 if match else -1
        if newline < 0:
            return None
        return self.offset, self.line, self._cut(newline, True, True), False

    def _record(self) -> Raw:
        """The next record, read on chunk after chunk until it ends (or the file does); past
        the limit, its bytes are scanned and dropped."""
        offset, line = self.offset, self.line
        state, i, kept = self._first, self._pos, True
        while True:
            state, i, found = self._scan(self._buf, state, i)
            if found:
                break
            if len(self._buf) - self._pos > self._limit + 1:  # +1: a CR before the newline
                kept = False
            if not kept:  # go on scanning, without the bytes scanned
                self.line += self._buf.count(b"\n", self._pos, i)
                self._pos = i
            ahead = i - self._pos
            if not self._read():
                i = len(self._buf)
                break
            i = self._pos + ahead
        return offset, line, self._cut(i, found, kept), not found and state is _State.QUOTED

    def _cut(self, stop: int, found: bool, kept: bool) -> bytearray | None:
        """Consume the record up to ``stop`` (and its newline when ``found``): its bytes, the CR
        of a CRLF aside, or None when they exceed the limit."""
        buf, start = self._buf, self._pos
        self.line += buf.count(b"\n", start, stop) + found
        self._pos = stop + found
        if stop > start and buf[stop - 1] == _CR:
            stop -= 1
        return buf[start:stop] if kept and stop - start <= self._limit else None
