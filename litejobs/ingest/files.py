"""The files a pipeline may import: regular files under the folder its ``Files`` declares, in
the storage it declares, opened so that nothing else is read through them.

A name is refused at once (``ingest-file-name-invalid``) unless it is a relative name inside
the storage: no leading ``/``, no ``..`` nor ``.``, no empty part, no backslash. A name outside
the declared folder, a file that does not exist, a directory, a symbolic link (anywhere on its
path), a FIFO and a device all answer the same (``ingest-file-missing``, one message): a user
who may start imports learns nothing of what else the storage holds. On a file-system storage
each folder of the path is opened without following a link, then the file itself (without
waiting: a FIFO without a writer would block), and it must be a regular file; other storages
(S3 and the like) hold objects only and are opened as they answer.

An import reads no more of its file than the size it had when the import started
(``Bounded``): rows appended while it runs are for the next import.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import IO, Any

from django.core.files.storage import FileSystemStorage, Storage, storages

from .declarations import Declaration, Files
from .errors import ImportRefused

__all__ = ["NAME_MAX", "Bounded", "Opened", "declared_files", "open_file"]

#: The longest file name an import takes (``ImportRun.file``).
NAME_MAX = 500
#: How a file-system import opens each folder of its path, and then its file.
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY


@dataclass
class Opened:
    """A file opened for an import, and its size then."""

    file: IO[bytes]
    size: int


def declared_files(declaration: Declaration) -> Files:
    """Where the pipeline's imports may read, or ``ingest-files-undeclared``."""
    if declaration.files is None:
        raise ImportRefused(
            f"Pipeline {declaration.name!r} declares no files=, so it imports no file; declare "
            "where its files come from, such as files=Files(prefix='feeds/catalog/').",
            code="ingest-files-undeclared",
        )
    return declaration.files


def check_name(name: Any) -> str:
    """``name`` when it is a relative name inside a storage, or ``ingest-file-name-invalid``."""
    parts = name.split("/") if isinstance(name, str) else []
    if (
        not parts
        or len(name) > NAME_MAX
        or "\\" in name
        or "\0" in name
        or any(part in ("", ".", "..") for part in parts)
    ):
        shown = repr(name)[:80] if isinstance(name, str) else f"a {type(name).__name__}"
        raise ImportRefused(
            f"A file to import is named by its relative name in its pipeline's storage, such as "
            f"'feeds/catalog/2026-06.csv' (at most {NAME_MAX} characters, without '..', '.', "
            f"'//', a backslash or a leading '/'); got {shown}.",
            code="ingest-file-name-invalid",
        )
    return str(name)


def _missing(pipeline: str, files: Files, name: str) -> ImportRefused:
    return ImportRefused(
        f"Pipeline {pipeline!r} may import no file {name!r}: its files are the regular files "
        f"under {files} (no folder, link or device). Check the name.",
        code="ingest-file-missing",
    )


def _storage(alias: str) -> Storage:
    try:
        return storages[alias]
    except Exception as error:
        raise ImportRefused(
            f"files=Files(storage={alias!r}) names no storage of STORAGES; name one of its "
            "aliases.",
            code="ingest-storage-unknown",
        ) from error


def open_file(declaration: Declaration, name: str) -> Opened:
    """Open the pipeline's file ``name`` for reading, with its size: a regular file under its
    declared folder, else the refusal that says why (``ingest-file-missing`` alike for every
    file it may not read)."""
    files = declared_files(declaration)
    name = check_name(name)
    storage = _storage(files.storage)
    if not name.startswith(files.prefix):
        raise _missing(declaration.name, files, name)
    try:
        if isinstance(storage, FileSystemStorage):
            return _open_regular(os.fspath(storage.location), name.split("/"))
        size = storage.size(name)
        return Opened(storage.open(name, "rb"), size)
    except Exception as error:  # each storage answers a missing object its own way
        raise _missing(declaration.name, files, name) from error


def _open_regular(root: str, parts: list[str]) -> Opened:
    """Open ``root/parts...`` without following a link on the way, as a regular file."""
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            inner = os.open(part, _FOLDER, dir_fd=folder)
            os.close(folder)
            folder = inner
        descriptor = os.open(parts[-1], _FILE, dir_fd=folder)
    finally:
        os.close(folder)
    status = os.fstat(descriptor)
    if not stat.S_ISREG(status.st_mode):
        os.close(descriptor)
        raise OSError("not a regular file: a folder, a FIFO, a device or a socket")
    return Opened(os.fdopen(descriptor, "rb"), status.st_size)


class Bounded:
    """A file read up to ``end`` bytes at most, whatever was appended to it since."""

    def __init__(self, file: IO[bytes], end: int) -> None:
        self._file = file
        self._end = end
        self._position = 0

    def seek(self, offset: int, /) -> int:
        self._position = self._file.seek(offset)
        return self._position

    def read(self, size: int, /) -> bytes:
        data = self._file.read(max(0, min(size, self._end - self._position)))
        self._position += len(data)
        return data
