"""The test app's ingest pipeline: a vendor catalog, dropped and enriched in order, and
``vendor-a``, its consumer of a fake partner source.

``calls`` records each step's calls in order (tests read and clear it); a record whose
``"fail"`` field names a step makes that step raise (``"always"``) or raise until its n-th
attempt (``"until2"``); a record's ``"gate"`` (a path) makes its sink wait for that file.

The fake source lives in the folder ``LITEJOBS_TEST_SOURCE`` names (so real worker processes
read the same one as the test): records at positions 1 to the number in its ``size`` file,
in pages of ``page`` (10 unless that file says), each ``vendor-a`` fetch answering the page
past its position (the last record read). Every fetch appends ``start end`` to ``reads.log``;
a fetch that finds another one running (an exclusive lock on ``lock``) appends to
``overlaps.log``; ``delay`` holds seconds each fetch sleeps; while ``hold-<start>`` exists,
the fetch of the page starting there writes ``held-<start>`` and waits before it answers.
"""

import enum
import fcntl
import os
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path

from litejobs import Buffer, Files, Freshness, drop, enrich, pipeline

from .models import Product

#: (step, sku) of every call, in order.
calls: list[tuple[str, str]] = []
#: Attempts per (step, sku), for "fail": "until:n".
attempts: Counter[tuple[str, str]] = Counter()

#: Gates by sku for records that cannot carry one (a file's rows): ``LITEJOBS_TEST_GATES`` is
#: ``sku=path,...`` in a worker process a test starts.
GATES = dict(
    pair.split("=", 1) for pair in os.environ.get("LITEJOBS_TEST_GATES", "").split(",") if pair
)

RATES = {"EUR": Decimal("1"), "USD": Decimal("0.9"), "GBP": Decimal("1.2")}


class Reason(enum.Enum):
    DISCONTINUED = "discontinued"
    BELOW_THRESHOLD = "below_threshold"
    POISON = "poison"
    OVERFLOW = "overflow"


def _maybe_fail(step: str, record: dict) -> None:
    calls.append((step, record["sku"]))
    attempts[(step, record["sku"])] += 1
    fail = record.get("fail", "")
    if not fail.startswith(step + ":"):
        return
    how = fail.split(":", 1)[1]
    if how == "always" or attempts[(step, record["sku"])] < int(how.removeprefix("until")):
        raise RuntimeError(f"{step} failed on {record['sku']}")


@drop(reasons={Reason.DISCONTINUED})
def parse(record):
    _maybe_fail("parse", record)
    if record.get("status") == "discontinued":
        return Reason.DISCONTINUED
    if record.get("status") == "bogus":
        return "bogus"  # outside the set: an error, never a drop
    return None


@enrich(sources={"rates"})
def price_in_eur(record, sources):
    _maybe_fail("price_in_eur", record)
    if record.get("peek"):
        sources["stock"]  # undeclared by this step
    rate = sources["rates"][record.get("currency", "EUR")]
    return {**record, "price_eur": str(Decimal(record["price"]) * rate)}


@drop(reasons={Reason.BELOW_THRESHOLD})
def below_threshold(record):
    _maybe_fail("below_threshold", record)
    return Reason.BELOW_THRESHOLD if Decimal(record["price_eur"]) < 1 else None


def _wait_at_gate(gate: Path) -> None:
    """Say this attempt started (``<gate>.started.<n>``), then wait for the gate to open."""
    attempt = 1 + len(list(gate.parent.glob(f"{gate.name}.started.*")))
    Path(f"{gate}.started.{attempt}").touch()
    deadline = time.monotonic() + 60
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def save_product(record):
    _maybe_fail("sink", record)
    if record.get("sleep"):
        time.sleep(float(record["sleep"]))
    gate = record.get("gate") or GATES.get(record["sku"])
    if gate:
        _wait_at_gate(Path(gate))
    product, created = Product.objects.get_or_create(
        sku=record["sku"],
        defaults={"name": record["name"], "price_eur": record["price_eur"], "writes": 1},
    )
    if not created:
        product.name, product.price_eur = record["name"], record["price_eur"]
        product.writes += 1
        product.save()
    _maybe_fail("written", record)  # after the write: its savepoint must undo it


catalog = pipeline(
    "tests.catalog",
    steps=[parse, price_in_eur, below_threshold],
    drop_reasons=Reason,
    sources={"rates": RATES, "stock": {"A": 1}},
    key=lambda r: r["sku"],
    columns=["sku", "name", "price", "currency", "status"],
    sink=save_product,
    buffer=Buffer(capacity=1000, overflow="block", wait="1s"),
    batch_size=50,
    freshness=Freshness.bounded("15m"),
    files=Files(prefix="feeds/"),
)


def record(sku: str, price: str = "10", **fields) -> dict:
    """A catalog record of ``sku``, active, in EUR, with ``fields`` over those."""
    return {
        "sku": sku,
        "name": f"Product {sku}",
        "price": price,
        "currency": "EUR",
        "status": "active",
        **fields,
    }


def source_record(position: int) -> dict:
    """The fake source's record at ``position``."""
    return record(f"S{position:04d}")


def _number(folder: Path, name: str, default: float) -> float:
    path = folder / name
    return float(path.read_text()) if path.exists() else default


def _append(path: Path, line: str) -> None:
    with path.open("a") as log:
        log.write(line + "\n")


@catalog.consumer("vendor-a")
def fetch_vendor_a(position):
    """The page of the fake source past ``position``; ``([], position)`` once caught up."""
    folder = Path(os.environ["LITEJOBS_TEST_SOURCE"])
    with (folder / "lock").open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _append(folder / "overlaps.log", f"{os.getpid()} {position}")
        start = (position or 0) + 1
        end = min(start - 1 + int(_number(folder, "page", 10)), int(_number(folder, "size", 0)))
        _append(folder / "reads.log", f"{start} {end}")
        time.sleep(_number(folder, "delay", 0))
        hold = folder / f"hold-{start}"
        if hold.exists():
            (folder / f"held-{start}").write_text(str(os.getpid()))
            while hold.exists():
                time.sleep(0.02)
        if end < start:
            return [], position
        return [source_record(n) for n in range(start, end + 1)], end
