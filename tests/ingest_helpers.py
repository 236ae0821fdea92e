"""Helpers of the consumer tests: the fake partner source ``vendor-a`` reads (see
``tests/testapp/pipelines.py``), and what landed of it."""

from __future__ import annotations

from pathlib import Path

from litejobs.models import BufferedRecord
from tests.testapp.models import Product

#: The folder of the fake source, as the consumer reads it (from the environment).
SOURCE_VARIABLE = "LITEJOBS_TEST_SOURCE"


class Source:
    """The fake source's folder: its size, page, delay and holds, and what was read of it."""

    def __init__(self, folder: Path, size: int = 0) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.size = size

    def _write(self, name: str, value: object) -> None:
        (self.folder / name).write_text(str(value))

    @property
    def size(self) -> int:
        return int((self.folder / "size").read_text())

    @size.setter
    def size(self, value: int) -> None:
        self._write("size", value)

    def page(self, value: int) -> None:
        self._write("page", value)

    def delay(self, seconds: float) -> None:
        self._write("delay", seconds)

    def hold(self, start: int) -> Path:
        """Make the fetch of the page starting at ``start`` wait (until the file is removed)."""
        path = self.folder / f"hold-{start}"
        path.touch()
        return path

    def held(self, start: int) -> bool:
        return (self.folder / f"held-{start}").exists()

    def reads(self) -> list[tuple[int, int]]:
        """Every fetch's (start, end), in order; end < start: it found nothing new."""
        path = self.folder / "reads.log"
        if not path.exists():
            return []
        return [tuple(map(int, line.split())) for line in path.read_text().splitlines()]

    def overlaps(self) -> list[str]:
        """The fetches that began while another one ran."""
        path = self.folder / "overlaps.log"
        return path.read_text().splitlines() if path.exists() else []


def skus(first: int, last: int) -> list[str]:
    """The skus of the source's records ``first`` to ``last``."""
    return [f"S{n:04d}" for n in range(first, last + 1)]


def buffered() -> list[str]:
    """The keys waiting in the buffer, in order."""
    return list(BufferedRecord.objects.order_by("id").values_list("key", flat=True))


def landed() -> dict[str, int]:
    """Each product the sink wrote, with how many times it wrote it."""
    return dict(Product.objects.order_by("sku").values_list("sku", "writes"))
