"""The bench's child processes: litejobs workers and plain-SQL floors, started with 'spawn'.

A child builds its runtime (a ``Worker`` on the scratch database, or a floor), says ``ready``
with the ``synchronous_commit`` its connections run with, waits for ``go`` (the bench's clock
starts there), runs, answers ``count`` requests (its statements, or what it received) and
``usage`` requests (its CPU since ``go``, its memory, what it received) and, on ``stop``,
stops and answers its report. Its output goes to a log file the bench quotes when the child
fails.

A worker child loads the project's own settings module, then points the litejobs database
alias at the scratch database (with the bench's durability ``options``) and takes the bench
process's ``LITEJOBS`` settings before ``django.setup()``: it never connects to the project's
database.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from .errors import BenchError

if TYPE_CHECKING:
    import psycopg

#: How long a child may take to start (Django setup on a busy machine).
START_TIMEOUT = 120.0
#: How long a stopping worker may take to drain and answer.
STOP_TIMEOUT = 60.0


@dataclass(frozen=True)
class DjangoTarget:
    """What a worker child needs to set Django up on the scratch database."""

    settings_module: str
    alias: str
    database: str
    litejobs: dict[str, Any]
    #: libpq ``options`` for the alias's connections (the durability variant), or "" for none.
    session_options: str = ""
    #: The bench's storage alias (W11's files, W12's outputs) and the folder it serves, when
    #: it has one.
    storage_alias: str = ""
    storage_location: str = ""


@dataclass(frozen=True)
class ChildSpec:
    """One child: its role (``worker``, ``drain``, ``listen``, ``idle``) and what it needs."""

    role: str
    log_path: str
    threads: int = 1
    params: dict[str, Any] = field(default_factory=dict)
    django: DjangoTarget | None = None
    heartbeat: float = 20.0
    count_statements: bool = False


class StatementCounter:
    """Counts the SQL statements this process sends through psycopg (W5's client-side method).

    Every ``psycopg.Cursor.execute`` is one statement (Django's cursors and the worker's raw
    control connection both end there); a transaction committed or rolled back adds two, its
    BEGIN and its COMMIT or ROLLBACK. Installed in a bench child only, before anything connects.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0

    def add(self, statements: int) -> None:
        with self._lock:
            self.value += statements

    @classmethod
    def install(cls) -> StatementCounter:
        """Wrap psycopg's execute, commit and rollback in this process; answers the counter."""
        import psycopg
        from psycopg.pq import TransactionStatus

        counter = cls()
        execute = psycopg.Cursor.execute

        @functools.wraps(execute)
        def counted_execute(cursor: psycopg.Cursor[Any], *args: Any, **kwargs: Any) -> Any:
            counter.add(1)
            return execute(cursor, *args, **kwargs)

        def ending(original: Callable[[psycopg.Connection[Any]], None]) -> Callable[..., None]:
            @functools.wraps(original)
            def counted(connection: psycopg.Connection[Any]) -> None:
                if connection.info.transaction_status != TransactionStatus.IDLE:
                    counter.add(2)
                return original(connection)

            return counted

        # Counting means replacing psycopg's own methods in this (spawned, bench-only) process.
        replaced: list[tuple[type, str, Callable[..., Any]]] = [
            (psycopg.Cursor, "execute", counted_execute),
            (psycopg.Connection, "commit", ending(psycopg.Connection.commit)),
            (psycopg.Connection, "rollback", ending(psycopg.Connection.rollback)),
        ]
        for owner, name, counting in replaced:
            setattr(owner, name, counting)
        return counter


class WorkerRuntime:
    """A litejobs ``Worker`` (what ``runworker`` runs) with ``threads`` runner threads."""

    def __init__(self, threads: int) -> None:
        from ..worker import Worker

        self.worker = Worker(concurrency=threads, install_signals=False)

    def run(self) -> None:
        self.worker.run()

    def stop(self) -> None:
        self.worker.request_stop()

    def count(self) -> int:
        """The jobs this worker has settled so far, whatever their outcome."""
        return sum(self.worker.counts.values())

    def report(self) -> dict[str, int]:
        return dict(self.worker.counts)


def _setup_django(target: DjangoTarget) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = target.settings_module
    import django
    from django.conf import settings

    database: dict[str, Any] = settings.DATABASES[target.alias]
    database["NAME"] = target.database
    if target.session_options:
        database["OPTIONS"] = {**database.get("OPTIONS", {}), "options": target.session_options}
    settings.LITEJOBS = target.litejobs
    django.setup()
    from . import exports, files, jobs, pipeline  # noqa: F401 - jobs declares the bench's jobs

    pipeline.declare(target.storage_alias)
    exports.declare()
    if target.storage_alias:
        files.use_storage(target.storage_alias, target.storage_location)


class Runtime(Protocol):
    """What a child runs: a litejobs worker or one of the floor's loops."""

    def run(self) -> None: ...

    def stop(self) -> None: ...

    def count(self) -> int: ...

    def report(self) -> Any: ...


def _build(spec: ChildSpec) -> Runtime:
    if spec.role == "worker":
        _setup_django(cast(DjangoTarget, spec.django))  # a worker's spec always names it
        return WorkerRuntime(spec.threads)
    from . import floor

    if spec.role == "drain":
        return floor.Drain(spec.params, spec.threads)
    if spec.role == "steps":
        from .jobs import STEPS

        return floor.StepsDrain(spec.params, spec.threads, STEPS)
    if spec.role == "listen":
        return floor.Listen(spec.params)
    return floor.Idle(spec.params, spec.heartbeat)


def _synchronous_commit(spec: ChildSpec) -> str:
    """``SHOW synchronous_commit`` on a connection opened as the runtime opens its own."""
    if spec.django is not None:
        from django.db import connections

        connection = connections[spec.django.alias]
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            value: str = cast(tuple[str], cursor.fetchone())[0]
        connection.close()
        return value
    import psycopg

    with psycopg.connect(**spec.params) as conn:
        shown: str = cast(tuple[str], conn.execute("SHOW synchronous_commit").fetchone())[0]
        return shown


@dataclass(frozen=True)
class Usage:
    """A child's resources: process CPU since ``go`` (all threads, user and system), its
    peak and its current resident set size, and its runtime's ``count()``."""

    cpu_seconds: float
    peak_rss_bytes: int
    rss_bytes: int
    count: int


def _memory() -> tuple[int, int]:
    """This process's peak and current resident set size in bytes: Linux's ``VmHWM`` and
    ``VmRSS``.

    Not ``getrusage``'s ``ru_maxrss``: Linux carries that over the fork and exec that spawn
    a child, so a child would report its parent's peak when the parent is larger.
    """
    status = Path("/proc/self/status")
    if not status.exists():
        raise BenchError("W6 reads each worker's memory from /proc/self/status (Linux only).")
    sizes = {}
    for line in status.read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmHWM", "VmRSS"):
            sizes[name] = int(value.split()[0]) * 1024
    if len(sizes) < 2:
        raise BenchError(
            "/proc/self/status lacks VmHWM or VmRSS; W6 cannot read a worker's memory."
        )
    return sizes["VmHWM"], sizes["VmRSS"]


def _usage(cpu_at_go: float, runtime: Runtime) -> Usage:
    return Usage(time.process_time() - cpu_at_go, *_memory(), runtime.count())


def main(spec: ChildSpec, pipe: Connection) -> None:
    """The child's entry point (runs in the spawned process)."""
    log = os.open(spec.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    counter = StatementCounter.install() if spec.count_statements else None
    runtime = _build(spec)
    pipe.send(("ready", _synchronous_commit(spec)))
    if pipe.recv() != "go":
        return
    cpu_at_go = time.process_time()
    serving = threading.Thread(target=_serve, args=(pipe, runtime, counter, cpu_at_go), daemon=True)
    serving.start()
    runtime.run()
    serving.join()
    pipe.send(runtime.report())


def _serve(
    pipe: Connection, runtime: Runtime, counter: StatementCounter | None, cpu_at_go: float
) -> None:
    """Answer the bench's requests until ``stop`` (or the bench went away)."""
    while True:
        try:
            message = pipe.recv()
        except EOFError:
            message = "stop"
        if message == "count":
            pipe.send(counter.value if counter is not None else runtime.count())
        elif message == "usage":
            pipe.send(_usage(cpu_at_go, runtime))
        elif message == "stop":
            runtime.stop()
            return


class Child:
    """The bench's handle on one child process."""

    def __init__(self, spec: ChildSpec) -> None:
        context = multiprocessing.get_context("spawn")
        self.spec = spec
        self._pipe, theirs = context.Pipe()
        self.process = context.Process(
            target=main, args=(spec, theirs), name=f"litejobs-bench-{spec.role}", daemon=True
        )
        self.process.start()
        theirs.close()
        #: What ``SHOW synchronous_commit`` answered on the child's connections (once ready).
        self.synchronous_commit = ""

    def ready(self) -> None:
        """Wait until the child built its runtime."""
        _, self.synchronous_commit = self._answer("ready", START_TIMEOUT)

    def go(self) -> None:
        """Start the runtime."""
        self._pipe.send("go")

    def count(self) -> int:
        """The child's statement count (when counting), else what its runtime received."""
        self._pipe.send("count")
        counted: int = self._answer("count", 30.0)
        return counted

    def usage(self) -> Usage:
        """The child's CPU since ``go``, its memory, and its runtime's count."""
        self._pipe.send("usage")
        usage: Usage = self._answer("usage", 30.0)
        return usage

    def stop(self) -> Any:
        """Stop the runtime and answer its report."""
        self._pipe.send("stop")
        report = self._answer("stop", STOP_TIMEOUT)
        self.process.join(10.0)
        return report

    def check(self) -> None:
        """Raise if the child died."""
        if not self.process.is_alive():
            raise self._failed("exited")

    def close(self) -> None:
        """End the child if it still runs (after a failure elsewhere)."""
        if self.process.is_alive():
            self.process.kill()
        self.process.join(10.0)
        self._pipe.close()

    def _answer(self, request: str, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while not self._pipe.poll(0.1):
            self.check()
            if time.monotonic() > deadline:
                raise self._failed(f"did not answer {request!r} within {timeout:.0f} s")
        try:
            return self._pipe.recv()
        except EOFError:
            raise self._failed("exited") from None

    def _failed(self, what: str) -> BenchError:
        self.process.join(1.0)
        code = self.process.exitcode
        log = Path(self.spec.log_path)
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
        return BenchError(
            f"The bench's {self.spec.role} process {what} (exit code {code}). The end of its "
            f"log ({log}):\n{tail}"
        )


@contextmanager
def started(specs: list[ChildSpec]) -> Iterator[list[Child]]:
    """Start children and wait until all are ready; ends any still running on the way out."""
    with ExitStack() as stack:
        children = []
        for spec in specs:
            child = Child(spec)
            stack.callback(child.close)
            children.append(child)
        for child in children:
            child.ready()
        yield children
