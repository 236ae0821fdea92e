"""``make demo``: migrate, seed, then run the web server and a worker until Ctrl-C.

A plain class the ``demo`` command only wraps, so a test can drive its parts. The children
are real ``manage.py`` processes, exactly what a deployment runs side by side. Each child
gets its own process group: the terminal's Ctrl-C reaches only this process, which forwards
it once — a worker that received the terminal's signal *and* a forwarded one would take it
as the "second signal" and exit without draining.

Before the children start, a signal interrupts setup (migrate, seeding) like Ctrl-C always
does. From then on the handler only counts; the supervising loop does all the forwarding, so
a signal that lands while a child is being spawned is still delivered to it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import TextIO

from django.conf import settings
from django.core.management import call_command
from django.db import connections
from django.urls import reverse

from litejobs.conf import settings as litejobs_settings
from project import database
from project.catalog.seed import FILE_NAME as CATALOG_FILE
from project.orders.seed import EXPORTERS, TenantSeed
from project.partners.endpoint import ensure_endpoint
from project.payments.seed import REVIEWERS
from project.payouts.seed import FINANCE_PASSWORD, FINANCE_USERNAME, PayoutSeed

from .seed import LOGINS, seed_demo_data

MANAGE_PY = database.BASE_DIR / "manage.py"
#: How often the supervising loop looks at its children and at pending signals.
TICK = 0.1
#: Extra seconds children get beyond the worker's drain timeout before they are killed.
STOP_GRACE = 15.0


class DemoError(Exception):
    """The demo cannot start; the message says what to change."""


@dataclass
class Child:
    """One ``manage.py`` process the demo started."""

    name: str
    process: subprocess.Popen
    signalled: bool = False

    @property
    def alive(self) -> bool:
        return self.process.poll() is None


class DemoRunner:
    """Prepares the database, runs the demo's processes, and stops all of them together."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        worker: bool = True,
        out: TextIO | None = None,
        verbosity: int = 1,
        ready_timeout: float = 60.0,
    ) -> None:
        self.host = host
        self.port = port
        self.worker = worker
        self.out = out or sys.stdout
        self.verbosity = verbosity
        self.ready_timeout = ready_timeout
        self.children: list[Child] = []
        self._running = False  # children may exist: signals are forwarded, not raised
        self._signals = 0
        self._signum = signal.SIGTERM
        self._failed: str | None = None
        self._finance: dict[str, str] = {}  # the finance device whose secret is printed

    # The whole run ---------------------------------------------------------------------------

    def run(self) -> int:
        """Serve the demo until a signal; answers the exit code (0 after a clean Ctrl-C)."""
        previous = {
            signum: signal.signal(signum, self._on_signal)
            for signum in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            self.check_port()
            self.prepare()
            self.start()
            if self.wait_until_serving():
                self.announce()
            return self.supervise()
        except KeyboardInterrupt:  # a signal during migrate or seeding
            self.say("Interrupted before the demo started.")
            return 130
        finally:
            self._running = True  # from here a signal is counted, never raised
            self._kill_leftovers()
            self.stop_database()
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _on_signal(self, signum: int, frame) -> None:
        self._signals += 1
        if self._signals == 1:
            self._signum = signum
        if not self._running:
            raise KeyboardInterrupt

    # Steps -----------------------------------------------------------------------------------

    def check_port(self) -> None:
        """Refuse a busy port now, before minutes of setup end in the web server's bind error."""
        try:
            family, kind, proto, _, address = socket.getaddrinfo(
                self.host, self.port, type=socket.SOCK_STREAM
            )[0]
        except socket.gaierror as exc:
            raise DemoError(f"Cannot use --host {self.host!r}: {exc.strerror}.") from exc
        with socket.socket(family, kind, proto) as probe:
            # As the server will: a port that only has connections in TIME_WAIT is free.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                raise DemoError(
                    f"Port {self.port} on {self.host} is busy ({exc.strerror}). Stop what "
                    f"listens there, or pick another port: manage.py demo --port {self.port + 1}"
                ) from exc

    def prepare(self) -> None:
        """Migrate and load the demo data; both are no-ops when already done."""
        self.say(f"Database: {self.describe_database()}")
        call_command("migrate", interactive=False, verbosity=max(0, self.verbosity - 1))
        # Before the orders: their orders.paid events are delivered to the partner's receiver.
        endpoint = ensure_endpoint(self.url(reverse("partner-webhooks")))
        self.say(f"Webhook endpoint #{endpoint.pk}: orders.paid events go to the demo partner.")
        report = seed_demo_data()
        if report.users_created:
            self.say(f"Created demo users: {', '.join(report.users_created)}")
        if report.orders_placed:
            ids = ", ".join(f"#{pk}" for pk in report.orders_placed)
            self.say(f"Placed demo orders {ids}: their receipt jobs are queued.")
        else:
            self.say("Demo data already loaded.")
        if report.checkouts_started:
            ids = ", ".join(f"#{pk}" for pk in report.checkouts_started)
            self.say(f"Started checkout sagas {ids}: one ships, one is undone (see Checkouts).")
        if report.disputes.disputes_created:
            self.say(f"Opened {report.disputes.disputes_created} disputes in the dispute queue.")
        if report.payouts.payouts_created:
            self.say(f"Queued {report.payouts.payouts_created} pending payouts (EUR and USD).")
        if report.catalog.copied:
            self.say(f"Copied the vendor catalog to {report.catalog.file} in the media storage.")
        if report.catalog.import_run:
            self.say(f"Import #{report.catalog.import_run} of the vendor catalog is queued.")
        self.say_tenants(report.tenants)
        self._finance = _finance_device(report.payouts)  # read now: the children own the DB
        connections.close_all()  # the children do the work from here on

    def start(self) -> None:
        """Start the web server, the worker (with its outbox relay) and the scheduler."""
        self._running = True
        addrport = f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
        self._spawn("web", "runserver", "--noreload", "--insecure", addrport)
        if self.worker:
            self._spawn("worker", "runworker")
            self._spawn("scheduler", "runscheduler")

    def wait_until_serving(self) -> bool:
        """Poll the admin login page until it answers; ``False`` if stopped or failed first."""
        deadline = time.monotonic() + self.ready_timeout
        url = self.url("/admin/login/")
        while time.monotonic() < deadline:
            if self._signals or self._failed or self._check_children():
                return False
            try:
                with urllib.request.urlopen(url, timeout=1) as response:  # noqa: S310 - http://host
                    if response.status == 200:
                        return True
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(TICK)
        self._begin_failure(f"the web server did not answer {url} within {self.ready_timeout:g}s")
        return False

    def announce(self) -> None:
        logins = ", ".join(str(login) for login in LOGINS)
        pids = ", ".join(f"{child.name} pid {child.process.pid}" for child in self.children)
        self.say("")
        self.say("litejobs demo is running:")
        self.say(f"  Shop:  {self.url('/')}  (place an order, watch its receipt job run)")
        self.say(f"  Admin: {self.url('/admin/')}  ({logins})")
        reviewers = ", ".join(str(reviewer) for reviewer in REVIEWERS)
        queue = self.url(reverse("admin:litejobs_workitem_queue", kwargs={"queue": "disputes"}))
        self.say(f"  Disputes: {queue}  ({reviewers}: clear the queue side by side)")
        received = self.url(reverse("admin:partners_receivedwebhook_changelist"))
        self.say(f"  Webhooks: {received}  (orders.paid, signed and verified by the partner)")
        products = self.url(reverse("admin:catalog_product_changelist"))
        self.say(f"  Catalog: {products}  (the vendor CSV through catalog.vendor, drops by reason)")
        pipeline = self.url(
            reverse("admin:litejobs_ingestcount_pipeline", kwargs={"name": "catalog.vendor"})
        )
        self.say(f"  Pipeline: {pipeline}  (import {CATALOG_FILE} again from there)")
        self.announce_finance()
        self.announce_reports()
        self.say(f"  Processes: {pids}")
        self.say("Receipt emails print in this terminal. Press Ctrl-C to stop everything.")
        self.say("")

    def announce_finance(self) -> None:
        """The payouts queue, the finance login and its TOTP device: the secret and otpauth URI
        (deliberately printed here, on the terminal of whoever runs the demo, so a person can
        add it to a phone or compute codes; the admin never shows a device's key)."""
        finance = self._finance
        if not finance:
            return
        login = f"{FINANCE_USERNAME}/{FINANCE_PASSWORD}"
        queue = self.url(reverse("admin:litejobs_workitem_queue", kwargs={"queue": "payouts"}))
        self.say(f"  Payouts: {queue}  ({login}: tick payouts, preview, confirm with a code)")
        self.say(f"  Finance TOTP secret: {finance['secret']}  (device {finance['name']!r})")
        self.say(f"  Finance otpauth URI: {finance['uri']}  (paste or scan into an authenticator)")

    def announce_reports(self) -> None:
        """Where to request, watch and download a report, and the tenants' logins."""
        north, south = (str(exporter) for exporter in EXPORTERS)
        self.say(
            f"  Reports: {self.url('/admin/')}  ({north}: litejobs → Report runs → Request a "
            "report → orders.export, watch it run, download it)"
        )
        self.say(f"  Tenants: {south} opens north's download link and is refused")

    def say_tenants(self, seeded: TenantSeed) -> None:
        """The order history seeded for the reports, if this run seeded it."""
        if seeded.orders_created:
            counts = " and ".join(f"{n} {tenant}" for tenant, n in seeded.orders_created.items())
            self.say(f"Seeded {counts} past orders for the reports (orders.export).")

    def supervise(self) -> int:
        """Wait for a signal or a dead child; stop every child; answer the exit code."""
        stop_deadline: float | None = None
        while True:
            self._check_children()
            stopping = bool(self._signals or self._failed)
            if stopping and stop_deadline is None:
                stop_deadline = time.monotonic() + self.stop_timeout()
                reason = self._failed or signal.Signals(self._signum).name
                self.say(f"Stopping ({reason}); waiting for the processes to finish ...")
            if self._signals >= 2:
                self._kill("second signal")
            elif stopping:
                self._forward()
                if stop_deadline is not None and time.monotonic() > stop_deadline:
                    self._kill(f"still running after {self.stop_timeout():g}s")
            if not any(child.alive for child in self.children):
                break
            time.sleep(TICK)
        for child in self.children:
            self.say(f"{child.name} stopped (exit code {child.process.returncode}).")
        return 1 if self._failed else 0

    def stop_database(self) -> None:
        """Stop the embedded PostgreSQL if this run started it; a server found running stays."""
        if os.environ.get("DATABASE_URL") or not database.started_here:
            return
        connections.close_all()
        database.stop_embedded()
        database.started_here = False
        self.say("Stopped the embedded PostgreSQL.")

    # Helpers ---------------------------------------------------------------------------------

    def say(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()

    def url(self, path: str) -> str:
        """A URL on the demo's server that a browser on this machine can open."""
        host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(self.host, self.host)  # noqa: S104
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}{path}"

    def stop_timeout(self) -> float:
        """How long children get to stop: the worker's drain, plus time to exit."""
        return litejobs_settings.duration("DRAIN_TIMEOUT").total_seconds() + STOP_GRACE

    def describe_database(self) -> str:
        if os.environ.get("DATABASE_URL"):
            db = settings.DATABASES["default"]
            host = db.get("HOST") or db.get("OPTIONS", {}).get("host") or "localhost"
            return f"DATABASE_URL (database {db['NAME']!r} on {host})"
        ownership = "started for this demo" if database.started_here else "already running"
        return f"embedded PostgreSQL in {database.embedded_data_dir()} ({ownership})"

    def _spawn(self, name: str, *args: str) -> None:
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": settings.SETTINGS_MODULE}
        env["PYTHONUNBUFFERED"] = "1"
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and manage.py
            [sys.executable, str(MANAGE_PY), *args],
            cwd=database.BASE_DIR,
            env=env,
            process_group=0,
        )
        self.children.append(Child(name, process))

    def _check_children(self) -> bool:
        """Notice a child that exited on its own; answers whether one did."""
        if self._signals or self._failed:
            return False
        for child in self.children:
            if not child.alive:
                self._begin_failure(f"{child.name} exited with code {child.process.returncode}")
                return True
        return False

    def _begin_failure(self, reason: str) -> None:
        self._failed = reason
        self._signum = signal.SIGTERM

    def _forward(self) -> None:
        """Pass the stop signal on, once per child (twice would mean "exit now" to a worker)."""
        for child in self.children:
            if child.alive and not child.signalled:
                child.process.send_signal(self._signum)
                child.signalled = True

    def _kill(self, reason: str) -> None:
        for child in self.children:
            if child.alive:
                self.say(f"Killing {child.name} ({reason}).")
                self._kill_group(child)

    def _kill_leftovers(self) -> None:
        """Nothing outlives the demo, even when it stops through an unexpected error."""
        for child in self.children:
            if child.alive:
                self._kill_group(child)

    @staticmethod
    def _kill_group(child: Child) -> None:
        """SIGKILL the child and anything it started (its process group is its own)."""
        with contextlib.suppress(ProcessLookupError):  # it exited since we looked
            os.killpg(child.process.pid, signal.SIGKILL)
        child.process.wait()


def _finance_device(payouts: PayoutSeed) -> dict[str, str]:
    """What the banner prints about the finance user's demo TOTP device."""
    device = payouts.device
    if device is None:
        return {}
    return {
        "pk": device.pk,
        "name": device.name,
        "secret": payouts.secret,
        "uri": device.config_url,
    }
