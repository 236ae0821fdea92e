"""Where a run's output lives in Django storage, and how it is written, read and removed.

A run writes into a directory of its own under its tenant's:
``litejobs/reports/<tenant>/<report>/<run id>-<random>/``, so one tenant's outputs never share
a prefix with another's and no address can be guessed from a neighbour's. Part 0 is the head
(byte order mark, CSV header), then one part per page (``part-000001.csv``, ...); a
``manifest.json`` listing the parts and their sizes is written when the run is done. A part is
written before the run records it, so a run resumed after its worker died writes the part of
its next page again, over whatever half of it the dead worker left.
"""

from __future__ import annotations

import hashlib
import io
import json
import secrets
from collections.abc import Iterator
from typing import IO, Any

from django.core.files.base import ContentFile
from django.core.files.storage import Storage, storages
from django.utils.text import slugify

from .errors import ReportRefused

ROOT = "litejobs/reports"
MANIFEST = "manifest.json"


def get(alias: str) -> Storage:
    """The storage of ``alias`` (an alias of ``STORAGES``)."""
    try:
        return storages[alias]
    except Exception as error:
        raise ReportRefused(
            f"LITEJOBS['REPORT_STORAGE']={alias!r} is not an alias of STORAGES; name one.",
            code="report-storage-unknown",
        ) from error


def tenant_directory(tenant: str) -> str:
    """A tenant's directory name: readable, and distinct for distinct tenants whatever their
    names (the digest tells apart tenants whose names slugify alike)."""
    if not tenant:
        return "no-tenant"
    digest = hashlib.sha256(tenant.encode()).hexdigest()[:12]
    return f"{slugify(tenant)[:40] or 'tenant'}-{digest}"


def directory(report_label: str, run_id: int, tenant: str) -> str:
    """A new run's output directory, under its tenant's."""
    token = secrets.token_hex(8)
    return f"{ROOT}/{tenant_directory(tenant)}/{report_label}/{run_id}-{token}"


def part_name(base: str, number: int, extension: str) -> str:
    """The name of part ``number`` (0: the head)."""
    return f"{base}/part-{number:06d}.{extension}"


def write(files: Storage, name: str, data: bytes) -> None:
    """Write ``data`` as ``name``, replacing what a dead worker may have left there."""
    if files.exists(name):
        files.delete(name)
    saved = files.save(name, ContentFile(data))
    if saved != name:
        files.delete(saved)
        raise ReportRefused(
            f"The storage wrote {saved!r} instead of {name!r}; a report's storage must keep "
            "the names it is given.",
            code="report-storage-unknown",
        )


def write_manifest(files: Storage, base: str, parts: list[str], summary: dict[str, Any]) -> None:
    """Record the output's parts in order with their sizes, beside them."""
    listed = [{"name": name.rpartition("/")[2], "bytes": files.size(name)} for name in parts]
    data = json.dumps({**summary, "parts": listed}, indent=1, sort_keys=True).encode()
    write(files, f"{base}/{MANIFEST}", data)


def parts_of(files: Storage, base: str) -> list[str]:
    """The output's parts in order, as its manifest lists them."""
    with files.open(f"{base}/{MANIFEST}", "rb") as manifest:
        listed = json.load(manifest)["parts"]
    return [f"{base}/{part['name']}" for part in listed]


def remove(files: Storage, base: str) -> int:
    """Remove a run's directory (parts and manifest); answers how many files went."""
    if not base:
        return 0
    try:
        _, names = files.listdir(base)
    except (FileNotFoundError, NotImplementedError):
        return 0
    for name in names:
        files.delete(f"{base}/{name}")
    return len(names)


class Joined(io.RawIOBase):
    """The parts of an output read as one file, a part open at a time (memory stays flat
    whatever the size): what the download streams."""

    def __init__(self, files: Storage, names: list[str]) -> None:
        super().__init__()
        self._files = files
        self._names: Iterator[str] = iter(names)
        self._current: IO[bytes] | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while True:
            if self._current is None:
                name = next(self._names, None)
                if name is None:
                    return 0
                self._current = self._files.open(name, "rb")
            data = self._current.read(len(buffer))
            if data:
                buffer[: len(data)] = data
                return len(data)
            self._current.close()
            self._current = None

    def close(self) -> None:
        if self._current is not None:
            self._current.close()
            self._current = None
        super().close()
