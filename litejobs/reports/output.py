"""A report's output as bytes, a part at a time: the head (the byte order mark when asked for,
and CSV's header row of the declared column names, in order), then one part per page.

CSV follows RFC 4180 as spreadsheets read it: comma-separated, fields quoted when they hold a
comma, a quote or a line break, CRLF between rows, an empty field for NULL. NDJSON is one JSON
object per line (LF). Both are encoded in the report's declared encoding; a value the encoding
cannot hold stops the run (``report-unencodable``) rather than write a replacement character.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from django.http import HttpResponse

from ..core.enums import ReportFormat
from .declarations import Declaration
from .errors import ReportRefused

CONTENT_TYPES = {ReportFormat.CSV: "text/csv", ReportFormat.NDJSON: "application/x-ndjson"}
_VALUES = itemgetter(slice(1, None))


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
        return response


def content_type(declaration: Declaration) -> str:
    """The output's media type with its charset."""
    return f"{CONTENT_TYPES[ReportFormat(declaration.format)]}; charset={declaration.encoding}"


def extension(declaration: Declaration) -> str:
    """The output file's extension: ``csv`` or ``ndjson``."""
    return ReportFormat(declaration.format).value


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
    return encode(declaration, text)


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
