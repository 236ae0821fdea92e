"""What ``manage.py litejobs bench`` can run and was asked to run."""

from __future__ import annotations

from dataclasses import dataclass, field

WORKLOADS = (
    "W1",
    "W2",
    "W3",
    "W4",
    "W5",
    "W6",
    "W7",
    "W8",
    "W9",
    "W10",
    "W11",
    "W11F",
    "W12",
    "W13",
    "W14",
)
#: The default sizes: jobs for W1-W3 and W6, pickup samples for W4, five-step jobs for W7,
#: staged outbox rows for W8, history rows for W9, delayed jobs for W10, CSV rows imported for
#: W11, records fed for W11F, rows exported for W12, lock acquire + release pairs for W13,
#: children of W14's batch.
SIZES = {
    "W1": 2000,
    "W2": 10_000,
    "W3": 10_000,
    "W4": 200,
    "W6": 100_000,
    "W7": 1000,
    "W8": 10_000,
    "W9": 1_000_000,
    "W10": 200,
    "W11": 1_000_000,
    "W11F": 10_000,
    "W12": 1_000_000,
    "W13": 2000,
    "W14": 10_000,
}
#: The two durability variants: ``synchronous_commit`` on (durable commits, the default) or
#: off, set on every connection the bench, its workers and its floors open.
DURABILITY = ("on", "off")
#: W3's scaling rows: worker-process counts, one thread each.
PROCESSES = (1, 2, 4, 8)


@dataclass(frozen=True)
class BenchOptions:
    """What ``manage.py litejobs bench`` was asked to run."""

    rounds: int = 3
    only: tuple[str, ...] = WORKLOADS
    sizes: dict[str, int] = field(default_factory=lambda: dict(SIZES))
    processes: tuple[int, ...] = PROCESSES
    idle_seconds: float = 60.0
    keep_db: bool = False
    durability: tuple[str, ...] = ("on",)
