"""The page reader of file imports: records cut on bytes, whole and exactly once whatever the
pages and chunks, refusals that say where and why but never what, and memory bounded by one
record whatever the file holds."""

from __future__ import annotations

import codecs
import csv
import io
import json
import tracemalloc

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from litejobs.core.errors import InvalidInput
from litejobs.ingest import reader
from litejobs.ingest.errors import ImportRefused
from litejobs.ingest.reader import (
    CHUNK_SIZE,
    HEADER_BYTES,
    HEADER_SECONDS,
    Format,
    Layout,
    Page,
    Refusal,
    RefusalCode,
    read_header,
    read_page,
)

BOM = codecs.BOM_UTF8
COLUMNS = ("id", "name", "note")


def read_all(data, fmt, columns, *, size=1000, chunk=CHUNK_SIZE, limit=1000, file=None):
    """Read a whole file page by page, each page from where the last one ended, as an import
    resuming after each page would: (records, refusals, layout, last page)."""
    file = file or io.BytesIO(data)
    layout = read_header(file, fmt, columns, max_record_bytes=limit, chunk_size=chunk)
    start, line = layout.offset, layout.line
    records, refusals = [], []
    while True:
        page = read_page(file, layout, start=start, line=line, size=size, chunk_size=chunk)
        taken = len(page.records) + len(page.refusals)
        assert taken == size or (page.done and taken < size)
        assert page.end >= start
        records += page.records
        refusals += page.refusals
        start, line = page.end, page.line
        if page.done:
            return records, refusals, layout, page


def refused(line, offset, code, field=None):
    return Refusal(line=line, offset=offset, field=field, code=code)


# CSV, case by case ------------------------------------------------------------------------------


def test_a_csv_file_reads_by_its_header_names_in_any_order():
    data = BOM + b"note,id,name\r\nhi,1,Ann\n\n\r\nyo,2,Bob\r\nlast,3,Cy"
    records, refusals, layout, page = read_all(data, "csv", COLUMNS)
    assert layout == Layout(Format.CSV, ("note", "id", "name"), 17, 2, 1000)
    assert records == [
        {"id": "1", "name": "Ann", "note": "hi"},
        {"id": "2", "name": "Bob", "note": "yo"},
        {"id": "3", "name": "Cy", "note": "last"},
    ]
    assert refusals == []
    assert (page.end, page.line, page.done) == (len(data), 6, True)


def test_quotes_hold_commas_newlines_and_doubled_quotes_and_lines_are_physical():
    data = b'id,name,note\n1,"a,b","two\r\nlines"\n2,"say ""hi""",x\n3,y\n4,z,w\n'
    records, refusals, _, page = read_all(data, "csv", COLUMNS)
    assert records == [
        {"id": "1", "name": "a,b", "note": "two\r\nlines"},
        {"id": "2", "name": 'say "hi"', "note": "x"},
        {"id": "4", "name": "z", "note": "w"},
    ]
    # The record of line 2 spans lines 2 and 3: the next starts on line 4.
    assert refusals == [refused(5, data.index(b"3,y"), "field-count")]
    assert page.line == 7


def test_a_quote_inside_an_unquoted_field_is_data_as_the_csv_module_reads_it():
    data = b'id,name,note\n1,5" disk,"a\nb"\n2,"x"y,z\n'
    records, refusals, _, _ = read_all(data, "csv", COLUMNS)
    assert records == [
        {"id": "1", "name": '5" disk', "note": "a\nb"},
        {"id": "2", "name": "xy", "note": "z"},
    ]
    assert refusals == []


def test_each_bad_row_is_refused_alone_with_where_and_why():
    rows = [
        b"id,name,note",
        b"1,ok,fine",
        b"2,caf\xe9,latin-1",  # not UTF-8
        b"3,too,many,fields",
        b"4,cr\ralone,x",  # a carriage return alone outside quotes
        b"5,ok,again",
    ]
    data = b"\n".join(rows) + b'\n6,"never closed,x\n7,a,b\n'
    records, refusals, _, page = read_all(data, "csv", COLUMNS)
    assert records == [
        {"id": "1", "name": "ok", "note": "fine"},
        {"id": "5", "name": "ok", "note": "again"},
    ]
    offset = data.index
    assert refusals == [
        refused(3, offset(b"2,"), RefusalCode.ENCODING_INVALID),
        refused(4, offset(b"3,"), RefusalCode.FIELD_COUNT),
        refused(5, offset(b"4,"), RefusalCode.CSV_INVALID),
        # The file ends inside quotes: the rest is one record, refused where it starts.
        refused(7, offset(b"6,"), RefusalCode.QUOTE_UNCLOSED),
    ]
    assert (page.end, page.line, page.done) == (len(data), 9, True)


def test_a_value_postgresql_cannot_keep_is_refused_alone_naming_its_column():
    """A NUL character (in CSV or NDJSON, at any depth), a lone surrogate, a number out of
    range: each refuses its record and no other."""
    data = b'id,name,note\n1,ok,fine\n2,a\0b,x\n3,"quoted\0",y\n4,ok,again\n'
    records, refusals, _, _ = read_all(data, "csv", COLUMNS)
    assert [r["id"] for r in records] == ["1", "4"]
    assert refusals == [
        refused(3, data.index(b"2,"), "nul-character", "name"),
        refused(4, data.index(b"3,"), "nul-character", "name"),
    ]
    lines = [
        b'{"id": 1, "name": "ok", "note": "fine"}',
        b'{"id": 2, "name": "a\\u0000b", "note": 1}',
        b'{"id": 3, "name": "ok", "note": {"deep": ["x\\u0000"]}}',
        b'{"id": 4, "name": "ok", "note": {"k\\u0000": 1}}',
        b'{"id": 5, "name": "\\ud800", "note": 1}',
        b'{"id": 6, "name": "ok", "note": 1e400}',
        b'{"id": 7, "name": "\\ud83d\\ude00 C:\\\\users", "note": -1e308}',
    ]
    data = b"\n".join(lines)
    records, refusals, _, _ = read_all(data, "ndjson", COLUMNS)
    assert records == [
        {"id": 1, "name": "ok", "note": "fine"},
        {"id": 7, "name": "\U0001f600 C:\\users", "note": -1e308},
    ]
    offset = data.index
    assert refusals == [
        refused(2, offset(b'{"id": 2'), "nul-character", "name"),
        refused(3, offset(b'{"id": 3'), "nul-character", "note"),
        refused(4, offset(b'{"id": 4'), "nul-character", "note"),
        refused(5, offset(b'{"id": 5'), "value-unstorable", "name"),
        refused(6, offset(b'{"id": 6'), "value-unstorable"),
    ]


def test_a_refusal_never_carries_the_value_it_refused():
    secret = "s3cr3t-4111111111111111"
    data = (
        f"id,name,note\n1,{secret},x,extra\n2,{secret}".encode()
        + b"\xff\n"
        + f'3,"{secret}'.encode()
    )
    _, refusals, _, _ = read_all(data, "csv", COLUMNS)
    assert [r.code for r in refusals] == ["field-count", "encoding-invalid", "quote-unclosed"]
    assert secret not in repr(refusals)
    lines = [
        f'{{"id": 1, "name": "{secret}"}}',
        f'{{"id": 1, "name": "{secret}", "note": 1, "other": 1}}',
        f'["{secret}"]',
        f'{{"id": "{secret}"',
    ]
    _, refusals, _, _ = read_all("\n".join(lines).encode(), "ndjson", COLUMNS)
    assert [r.code for r in refusals] == [
        "field-missing",
        "field-unexpected",
        "record-not-object",
        "json-invalid",
    ]
    assert secret not in repr(refusals)


@pytest.mark.parametrize(
    ("data", "named"),
    [
        (b"id,name\n1,2\n", ["has 2 names for the 3 declared columns: it misses 'note' ("]),
        (b"id,name,note,extra\n", ["has 4 names for the 3 declared columns: it has 1 other name"]),
        (b"id,name,name,note\n", ["it repeats 1 name ("]),
        (b"id, name,note\n", ["it misses 'name', has 1 other name ("]),
        (b"ID,name,note,x,x\n", ["misses 'id', has 3 other names, repeats 1 name ("]),
        (b"", ["the file is empty"]),
        (b"\n\r\n", ["the file is empty"]),
        (b'id,name,"note\n1,2,3\n', ["cannot be read (quote-unclosed)"]),
        (b"id,n\xe4me,note\n", ["cannot be read (encoding-invalid)"]),
        (b"id,name,note\r,x\n", ["cannot be read (csv-invalid)"]),
    ],
)
def test_a_csv_header_other_than_the_declared_columns_is_refused_by_name(data, named):
    with pytest.raises(ImportRefused) as refusal:
        read_header(io.BytesIO(data), "csv", COLUMNS, max_record_bytes=100)
    assert refusal.value.code == "ingest-header-mismatch"
    for words in named:
        assert words in str(refusal.value)
    assert "('id', 'name', 'note')" in str(refusal.value)  # the declared columns, to fix it by


def test_a_header_refusal_names_declared_columns_never_the_files_words():
    """A file's first line may hold anything (another team's secrets): a refusal counts it."""
    data = b"DB_PASSWORD=hunter2,id,name,name\nnote\n"
    with pytest.raises(ImportRefused) as refusal:
        read_header(io.BytesIO(data), "csv", COLUMNS, max_record_bytes=100)
    message = str(refusal.value)
    assert "misses 'note', has 1 other name, repeats 1 name" in message
    assert "hunter2" not in message and "DB_PASSWORD" not in message


class Endless(io.RawIOBase):
    """A file of zeros that never ends (what ``/dev/zero`` reads as), counting what was read."""

    read_bytes = 0

    def readable(self):
        return True

    def seek(self, offset, whence=0):
        return 0

    def read(self, size=-1):
        self.read_bytes += size
        return b"\0" * size


@pytest.mark.parametrize("fmt", ["csv", "ndjson"])
def test_a_header_is_looked_for_in_a_bounded_number_of_bytes(fmt):
    endless = Endless()
    if fmt == "ndjson":  # no header: only the BOM is looked for
        read_header(endless, fmt, COLUMNS, max_record_bytes=100)
    else:
        with pytest.raises(ImportRefused, match=f"within its first {HEADER_BYTES} bytes"):
            read_header(endless, fmt, COLUMNS, max_record_bytes=10_000_000)
    assert endless.read_bytes <= HEADER_BYTES + 1


def test_a_header_is_looked_for_in_a_bounded_time(monkeypatch):
    class Slow(Endless):
        def read(self, size=-1):
            clock.append(clock[-1] + 4)  # each chunk takes four seconds
            return b"x" * min(size, 10)

    clock = [0.0]
    monkeypatch.setattr(reader.time, "monotonic", lambda: clock[-1])
    with pytest.raises(ImportRefused, match=f"header within {HEADER_SECONDS} s"):
        read_header(Slow(), "csv", COLUMNS, max_record_bytes=1000, chunk_size=10)
    assert len(clock) == 4  # started, then three chunks: the third came past the ten seconds


def test_the_bom_is_stripped_from_the_first_header_name_and_a_mid_file_bom_is_data():
    data = BOM + b"id,name,note\n1,2," + BOM + b"3\n"
    records, _, layout, _ = read_all(data, "csv", COLUMNS)
    assert layout.columns == COLUMNS
    assert records == [{"id": "1", "name": "2", "note": "\ufeff3"}]


def test_a_header_longer_than_the_record_limit_is_refused():
    with pytest.raises(ImportRefused, match=r"cannot be read \(record-too-large\)"):
        read_header(io.BytesIO(b"id,name,note\n"), "csv", COLUMNS, max_record_bytes=5)


def test_wrong_arguments_are_refused_before_reading():
    file = io.BytesIO(b"id,name,note\n")
    with pytest.raises(ImportRefused) as refusal:
        read_header(file, "xml", COLUMNS, max_record_bytes=100)
    assert refusal.value.code == "ingest-format-invalid"
    with pytest.raises(InvalidInput):
        read_header(file, "csv", ("id", "id"), max_record_bytes=100)
    layout = read_header(file, "csv", COLUMNS, max_record_bytes=100)
    with pytest.raises(InvalidInput):  # the header is no record
        read_page(file, layout, start=0, line=1, size=10)
    with pytest.raises(InvalidInput):
        read_page(file, layout, start=layout.offset, line=2, size=0)


def test_a_page_that_reads_the_last_record_says_the_file_is_done():
    data = b"id,name,note\n1,a,b\n2,c,d\n\n\r\n"
    file = io.BytesIO(data)
    layout = read_header(file, "csv", COLUMNS, max_record_bytes=100)
    first = read_page(file, layout, start=layout.offset, line=2, size=1)
    assert (first.end, first.line, first.done) == (data.index(b"2,"), 3, False)
    last = read_page(file, layout, start=first.end, line=first.line, size=1)
    assert last.records == [{"id": "2", "name": "c", "note": "d"}]
    assert (last.end, last.line, last.done) == (len(data), 6, True)  # blank lines past too


# Records longer than the limit ------------------------------------------------------------------


class LazyFile:
    """A seekable binary file of ``parts`` (bytes, or (byte, count) made on the fly), that
    records the size of each read."""

    def __init__(self, *parts):
        self.parts = [(p, 1) if isinstance(p, bytes) else p for p in parts]
        self.size = sum(len(p) * n for p, n in self.parts)
        self.position = 0
        self.reads = []

    def seek(self, offset, whence=0):
        self.position = offset
        return offset

    def read(self, size):
        self.reads.append(size)
        out, at = bytearray(), 0
        for piece, count in self.parts:
            first = self.position - at
            if 0 <= first < len(piece) * count and len(out) < size:
                want = min(size - len(out), len(piece) * count - first)
                skip = first % len(piece)
                out += (piece * (want // len(piece) + 2))[skip : skip + want]
                self.position += want
            at += len(piece) * count
        return bytes(out)


def test_the_lazy_file_is_the_file_it_stands_for():
    file = LazyFile(b"ab", (b"xyz", 4), b"\n")
    whole = b"ab" + b"xyz" * 4 + b"\n"
    assert file.read(5) + file.read(3) + file.read(100) + file.read(1) == whole
    file.seek(4)
    assert file.read(6) == whole[4:10]


@pytest.mark.parametrize(
    ("fmt", "head", "filler", "tail"),
    [
        ("csv", b"id,name,note\n1,", (b"x", 50_000_000), b",y\n2,ok,z\n"),
        # Quoted newlines inside the long record still count, and still do not end it.
        ("csv", b'id,name,note\n1,"', (b"x" * 997 + b'""\n', 50_000), b'",y\n2,ok,z\n'),
        ("ndjson", b'{"id": "', (b"x", 50_000_000), b'"}\n{"id": 2, "name": "ok", "note": "z"}\n'),
    ],
)
def test_a_record_of_50_mb_is_refused_in_the_memory_of_a_few_chunks(fmt, head, filler, tail):
    file = LazyFile(head, filler, tail)
    tracemalloc.start()
    try:
        records, refusals, layout, page = read_all(None, fmt, COLUMNS, limit=1000, file=file)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    long_line = 2 if fmt == "csv" else 1
    inner_lines = filler[0].count(b"\n") * filler[1]
    assert refusals == [refused(long_line, layout.offset, "record-too-large")]
    assert records == [{"id": 2 if fmt == "ndjson" else "2", "name": "ok", "note": "z"}]
    assert (page.end, page.line) == (file.size, long_line + inner_lines + 2)
    assert max(file.reads) == CHUNK_SIZE
    assert peak < 8 * CHUNK_SIZE + 1000


def test_a_record_exactly_at_the_limit_is_read_and_one_byte_more_is_refused():
    data = b"i,n,o\n1,ab,cd\r\n1,ab,cde\n1,ab,c\n"
    records, refusals, _, _ = read_all(data, "csv", ("i", "n", "o"), limit=7)
    assert records == [{"i": "1", "n": "ab", "o": "cd"}, {"i": "1", "n": "ab", "o": "c"}]
    assert refusals == [refused(3, data.index(b"1,ab,cde"), "record-too-large")]


def test_a_field_longer_than_the_csv_module_limit_is_read_when_its_record_fits():
    before = csv.field_size_limit(131_072)  # the csv module's default, process-wide
    try:
        data = b"id,name,note\n1," + b"x" * 200_000 + b',"' + b'y""' * 100_000 + b'"\n'
        records, refusals, _, _ = read_all(data, "csv", COLUMNS, limit=600_000)
    finally:
        csv.field_size_limit(before)
    assert refusals == []
    assert records == [{"id": "1", "name": "x" * 200_000, "note": 'y"' * 100_000}]


# NDJSON -----------------------------------------------------------------------------------------


def test_ndjson_records_are_objects_with_exactly_the_declared_keys():
    lines = [
        b'{"id": 1, "name": "Ann", "note": {"nested": [1, 2.5, null]}}',
        b"",
        b'{"id": 2, "name": "Bob"}',
        b'{"id": 3, "name": "Cy", "note": null, "extra": true}',
        b"[1, 2, 3]",
        b'{"id": 4, "name": NaN, "note": 1}',
        b'{"id": 5,',
        b'{"id": 6, "name": "caf\xe9", "note": 1}',
        b'{"note": "x", "name": "Di", "id": 7}\r',
    ]
    data = BOM + b"\n".join(lines)
    records, refusals, layout, page = read_all(data, "ndjson", COLUMNS)
    assert (layout.offset, layout.line, layout.columns) == (3, 1, COLUMNS)
    assert records == [
        {"id": 1, "name": "Ann", "note": {"nested": [1, 2.5, None]}},
        {"id": 7, "name": "Di", "note": "x"},
    ]
    offset = data.index
    assert refusals == [
        refused(3, offset(b'{"id": 2'), "field-missing", "note"),
        refused(4, offset(b'{"id": 3'), "field-unexpected"),  # its name is the file's
        refused(5, offset(b"[1, 2, 3]"), "record-not-object"),
        refused(6, offset(b'{"id": 4'), "json-invalid"),
        refused(7, offset(b'{"id": 5'), "json-invalid"),
        refused(8, offset(b'{"id": 6'), "encoding-invalid"),
    ]
    assert (page.end, page.line) == (len(data), 9)


def test_an_ndjson_file_without_a_bom_starts_at_its_first_byte():
    layout = read_header(io.BytesIO(b"{}\n"), Format.NDJSON, COLUMNS, max_record_bytes=10)
    assert (layout.offset, layout.line) == (0, 1)


# Properties: whole and exactly once, whatever the pages and chunks ------------------------------

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
special = st.text(st.sampled_from(',"\r\n ab\x00é€😀'), max_size=8)
fields = st.one_of(text, special)


@st.composite
def csv_items(draw):
    """One line of a CSV file, what it is, and its line ending."""
    kind = draw(st.sampled_from(["row", "row", "row", "blank", "width", "encoding"]))
    if kind == "blank":
        content, values = b"", None
    else:
        width = draw(st.sampled_from([1, 2, 4])) if kind == "width" else 3
        values = draw(st.lists(fields, min_size=width, max_size=width))
        out = io.StringIO()
        csv.writer(out, lineterminator="\r\n").writerow(values)
        content = out.getvalue().removesuffix("\r\n").encode()
        content += b"\xff" if kind == "encoding" else b""
    return kind, content, values, draw(st.sampled_from([b"\n", b"\r\n"]))


@st.composite
def csv_files(draw):
    """A CSV file of rows, blank lines and bad rows, and what reading it must answer."""
    header = draw(st.permutations(COLUMNS))
    limit = draw(st.integers(16, 80))
    items = draw(st.lists(csv_items(), max_size=20))
    bom = BOM if draw(st.booleans()) else b""
    data = bom + ",".join(header).encode() + b"\n"
    line, records, refusals = 2, [], []
    for index, (kind, content, values, ending) in enumerate(items):
        if index == len(items) - 1 and draw(st.booleans()):
            ending = b""  # the last record without a line ending
        code = {"width": "field-count", "encoding": "encoding-invalid"}.get(kind)
        if kind != "blank" and len(content) > limit:
            code = "record-too-large"
        nul = kind == "row" and next(
            (h for h, v in zip(header, values, strict=True) if "\0" in v), None
        )
        if code:
            refusals.append(refused(line, len(data), code))
        elif nul:
            refusals.append(refused(line, len(data), "nul-character", nul))
        elif kind == "row":
            records.append(dict(zip(header, values, strict=True)))
        data += content + ending
        line += content.count(b"\n") + (ending != b"")
    return data, limit, records, refusals, line


chunks = st.one_of(st.integers(1, 9), st.just(CHUNK_SIZE))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(csv_files(), st.integers(1, 7), chunks)
def test_csv_pages_of_any_size_read_each_record_once_whatever_the_chunks(file, size, chunk):
    data, limit, records, refusals, line = file
    whole = read_all(data, "csv", COLUMNS, size=10_000, chunk=CHUNK_SIZE, limit=limit)
    paged = read_all(data, "csv", COLUMNS, size=size, chunk=chunk, limit=limit)
    for read in (whole, paged):
        assert read[0] == records
        assert read[1] == refusals
        assert (read[3].end, read[3].line) == (len(data), line)


#: Bytes that make CSV hard: quotes and commas anywhere, line endings inside and outside quotes.
csv_bytes = st.lists(
    st.sampled_from([b"a", b"b", b",", b'"', b'"', b"\n", b"\r\n", b" ", "é".encode(), b"\x00"]),
    max_size=60,
).map(b"".join)


def as_the_csv_module_reads(data):
    """The rows of a CSV file (header aside) as Python's ``csv`` module reads them, each with
    the line and offset where it starts."""
    starts = [0] + [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]
    reader = csv.reader(io.StringIO(data.decode(), newline=""))
    next(reader)
    rows = []
    while True:
        line = reader.line_num + 1
        row = next(reader, None)
        if row is None:
            return rows
        if row:  # a blank line reads as []
            rows.append((line, starts[line - 1], row))


@settings(max_examples=2000, deadline=None)
@given(csv_bytes, st.integers(1, 5), chunks)
@example(b'a,""', 1, CHUNK_SIZE)  # a quote closes at the file's end
@example(b'a,"b""', 1, 5)  # a doubled quote at the end: still inside quotes
@example(b'a,"b\n",\n"c', 2, 5)  # a comma at a chunk's end, and its quote in the next
@example(b'"a\nb,c\n', 1, CHUNK_SIZE)  # a record's first quote never closes: all is one record
def test_any_csv_is_cut_where_the_csv_module_cuts_it(body, size, chunk):
    data = b"h1,h2\n" + body
    records, refusals, _, page = read_all(data, "csv", ("h1", "h2"), size=size, chunk=chunk)
    rows = as_the_csv_module_reads(data)
    if refusals and refusals[-1].code == "quote-unclosed":
        # The csv module reads a file that ends inside quotes as if they closed there.
        unclosed, (line, offset, _) = refusals.pop(), rows.pop()
        assert (unclosed.line, unclosed.offset) == (line, offset)
    assert records == [
        dict(zip(("h1", "h2"), row, strict=True))
        for _, _, row in rows
        if len(row) == 2 and not nul(row)
    ]
    assert refusals == [
        refused(line, offset, "nul-character", nul(row))
        if len(row) == 2
        else refused(line, offset, "field-count")
        for line, offset, row in rows
        if len(row) != 2 or nul(row)
    ]
    assert (page.end, page.line) == (len(data), data.count(b"\n") + 1)


def nul(row):
    """The column of the first field of ``row`` (h1, h2) holding a NUL character, if any."""
    return next((f"h{n}" for n, value in enumerate(row, start=1) if "\0" in value), None)


@st.composite
def ndjson_files(draw):
    """An NDJSON file of objects, blank lines and bad lines, and what reading it must answer."""
    limit = draw(st.integers(20, 120))
    values = st.one_of(
        st.none(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), text
    )
    data = BOM if draw(st.booleans()) else b""
    line, records, refusals = 1, [], []
    for _ in range(draw(st.integers(0, 15))):
        kind = draw(st.sampled_from(["object", "object", "blank", "missing", "extra", "array"]))
        value = {c: draw(values) for c in COLUMNS if not (kind == "missing" and c == "note")}
        if kind == "extra":
            value["more"] = 1
        content = (
            b""
            if kind == "blank"
            else json.dumps(
                [value] if kind == "array" else value, ensure_ascii=draw(st.booleans())
            ).encode()
        )
        nul = next((c for c, v in value.items() if isinstance(v, str) and "\0" in v), None)
        refusal = {
            "missing": ("field-missing", "note"),
            "extra": ("field-unexpected", None),
            "array": ("record-not-object", None),
            "object": ("nul-character", nul) if nul else None,
        }.get(kind)
        if kind != "blank" and len(content) > limit:
            refusal = ("record-too-large", None)
        if refusal:
            refusals.append(refused(line, len(data), refusal[0], refusal[1]))
        elif kind == "object":
            records.append(value)
        data += content + draw(st.sampled_from([b"\n", b"\r\n"]))
        line += 1
    return data, limit, records, refusals, line


@settings(max_examples=200, deadline=None)
@given(ndjson_files(), st.integers(1, 7), chunks)
def test_ndjson_pages_of_any_size_read_each_record_once_whatever_the_chunks(file, size, chunk):
    data, limit, records, refusals, line = file
    read = read_all(data, "ndjson", COLUMNS, size=size, chunk=chunk, limit=limit)
    assert read[0] == records
    assert read[1] == refusals
    assert (read[3].end, read[3].line) == (len(data), line)


def test_a_page_is_what_it_says():
    page = read_page(
        io.BytesIO(b"id,name,note\n1,2,3\n"),
        Layout(Format.CSV, COLUMNS, 13, 2, 100),
        start=13,
        line=2,
        size=5,
    )
    assert page == Page([{"id": "1", "name": "2", "note": "3"}], [], 19, 3, True)
