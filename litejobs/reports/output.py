"""A report's output as bytes, a part at a time: the head (the byte order mark when asked for,
and CSV's header row of the declared column names, in order), then one part per page.

CSV follows RFC 4180 as spreadsheets read it: comma-separated, fields quoted when they hold a
comma, a quote or a line break, CRLF between rows, an empty field for NULL. A field holding a
semicolon or a tab is quoted too, and a formula's lead right after either gets the ``'`` a
leading one gets in SQL (``query``), outside ``formula_columns``: a spreadsheet that splits
fields on them would otherwise cut ``x;=cmd`` in two, the second part a formula. Pages
without either (nearly all) are written by ``csv`` alone. NDJSON is one JSON object per line (LF).
Both are encoded in the report's declared encoding; a value the encoding cannot hold stops
the run (``report-unencodable``) rather than write a replacement character.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from django.http import HttpResponse
from django.http.response import HttpResponseBase
from django.utils.cache import patch_cache_control

from ..core.enums import ReportFormat
from .declarations import Declaration
from .errors import ReportRefused
from .query import FORMULA_LEADS

CONTENT_TYPES = {ReportFormat.CSV: "text/csv", ReportFormat.NDJSON: "application/x-ndjson"}
_VALUES = itemgetter(slice(1, None))
#: The separators other than the comma a spreadsheet may split a field on.
OTHER_SEPARATORS = (";", "\t")
#: What makes a field quoted: ``csv``'s own reasons, and the other separators.
_QUOTED = re.compile(r'[,"\r\n;\t]')
#: A formula's lead right after another separator (the lead stays, an ``'`` goes before it).
_LEAD_AFTER_SEPARATOR = re.compile(f"(?<=[;\t])(?=[{re.escape(''.join(FORMULA_LEADS))}])")
#: The most bytes UTF-8 takes for one character (every encoding takes at least one).
UTF8_MOST = 4


@dataclass(frozen=True)
class ReportOutput:
    """A report's output answered within the request: its bytes, media type, file name and
    row count; ``response()`` answers it as a download."""

    content: bytes
    content_type: str
    filename: str
    row_count: int

    def response(self) -> HttpResponse:
        """The output as an attachment."""
        response = HttpResponse(self.content, content_type=self.content_type)
        response["Content-Disposition"] = f'attachment; filename="{self.filename}"'
        private(response)
        return response


def private(response: HttpResponseBase) -> None:
    """Keep an output out of every cache (shared or the browser's): it is one user's read."""
    patch_cache_control(response, private=True, no_store=True)


def room_for(declaration: Declaration, left: int) -> int:
    """The bytes of UTF-8 values that may still come when the output has ``left`` bytes
    left: as many in UTF-8; in another encoding, where a character takes one byte or more
    and UTF-8 up to four, four times as many (a read cut past that is past ``left``)."""
    if codecs.lookup(declaration.encoding).name == "utf-8":
        return max(left, 0)
    return max(left, 0) * UTF8_MOST


def content_type(declaration: Declaration) -> str:
    """The output's media type with its charset."""
    return f"{CONTENT_TYPES[declaration.format]}; charset={declaration.encoding}"


def extension(declaration: Declaration) -> str:
    """The output file's extension: ``csv`` or ``ndjson``."""
    return declaration.format.value


def head(declaration: Declaration) -> bytes:
    """What comes before the rows: the byte order mark (``bom=True``), then CSV's header."""
    text = "\ufeff" if declaration.bom else ""
    if declaration.format is ReportFormat.CSV:
        buffer = io.StringIO()
        csv.writer(buffer).writerow(declaration.columns)
        text += buffer.getvalue()
    return encode(declaration, text)


def body(declaration: Declaration, rows: Sequence[Sequence[Any]]) -> bytes:
    """One page's rows (as ``query.shaped`` answers them: the key first) as bytes."""
    if declaration.format is ReportFormat.NDJSON:
        text = "".join(f"{row[1]}\n" for row in rows)
    else:
        buffer = io.StringIO()
        csv.writer(buffer).writerows(map(_VALUES, rows))
        text = buffer.getvalue()
        if any(separator in text for separator in OTHER_SEPARATORS):  # rare: a slower way
            escaped = [name not in declaration.formula_columns for name in declaration.columns]
            text = "".join(_line(row, escaped) for row in rows)
    return encode(declaration, text)


def _line(row: Sequence[Any], escaped: list[bool]) -> str:
    """A row as ``csv`` writes it, with fields holding a semicolon or a tab quoted too, and
    a lead after either escaped in the columns ``escaped`` marks."""
    values = row[1:]
    if len(values) == 1 and not values[0]:
        return '""\r\n'  # a lone empty field, quoted so the line is not read as no field
    return ",".join(map(_field, values, escaped)) + "\r\n"


def _field(value: str | None, escaped: bool) -> str:
    if value is None:
        return ""
    if escaped:
        value = _LEAD_AFTER_SEPARATOR.sub("'", value)
    if _QUOTED.search(value):
        return '"' + value.replace('"', '""') + '"'
    return value


def encode(declaration: Declaration, text: str) -> bytes:
    """``text`` in the report's encoding; a character it cannot hold is refused."""
    try:
        return text.encode(declaration.encoding)
    except UnicodeEncodeError as error:
        raise ReportRefused(
            f"Report {declaration.name!r}: a value holds {error.object[error.start]!r}, which "
            f"{declaration.encoding} cannot encode; declare encoding='utf-8' or clean the data.",
            code="report-unencodable",
        ) from None
