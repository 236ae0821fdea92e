"""The demo: its seed data, its shop page, its port check, and the newcomer path end to end."""

from __future__ import annotations

import contextlib
import http.cookiejar
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from datetime import timedelta
from pathlib import Path

import psutil
import psycopg
import pytest
from django.contrib.auth import get_user_model

from litejobs.models import Job, JobState
from project.demo.runner import DemoError, DemoRunner
from project.demo.seed import OPERATORS_GROUP, load_order_fixture, seed_demo_data
from project.orders.jobs import send_receipt
from project.orders.models import Member, Order
from project.orders.seed import FORMULA_NOTES, HISTORY, history_of
from tests.conftest import ROOT, wait_for
from tests.factories import UserFactory


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# Seed data ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_seeding_creates_the_logins_and_orders_once():
    fixture_orders = load_order_fixture()
    first = seed_demo_data()
    assert first.users_created == ["admin", "ops"]
    assert len(first.orders_placed) == len(fixture_orders) >= 3

    second = seed_demo_data()
    assert second.users_created == []
    assert second.orders_placed == []
    assert Order.objects.count() == len(fixture_orders) + sum(HISTORY.values())
    receipts = Job.objects.filter(name=send_receipt.name)
    assert sorted(receipts.values_list("key", flat=True)) == sorted(
        f"receipt:{pk}" for pk in first.orders_placed
    )
    assert set(receipts.values_list("state", flat=True)) == {JobState.READY}


@pytest.mark.django_db
def test_the_demo_logins_work_as_printed_and_ops_may_only_view():
    seed_demo_data()
    users = get_user_model().objects
    admin, ops = users.get(username="admin"), users.get(username="ops")
    assert admin.check_password("admin") and admin.is_superuser and admin.is_staff
    assert ops.check_password("ops") and ops.is_staff and not ops.is_superuser
    assert ops.groups.filter(name=OPERATORS_GROUP).exists()
    assert ops.has_perm("litejobs.view_job")
    assert ops.has_perm("litejobs.view_worker")
    assert ops.has_perm("orders.view_order")
    assert not ops.has_perm("litejobs.change_job")
    assert not ops.has_perm("litejobs.delete_job")


@pytest.mark.django_db
def test_reseeding_restores_a_changed_demo_password_without_a_new_user():
    seed_demo_data()
    admin = get_user_model().objects.get(username="admin")
    admin.set_password("changed")
    admin.is_superuser = False
    admin.save()
    report = seed_demo_data()
    admin.refresh_from_db()
    assert report.users_created == []
    assert admin.check_password("admin") and admin.is_superuser
    assert get_user_model().objects.filter(username="admin").count() == 1


@pytest.mark.django_db
def test_seeding_gives_each_tenant_its_order_history_and_exporter_once(clock):
    first = seed_demo_data()
    assert first.tenants.exporters_created == ["north", "south"]
    assert first.tenants.orders_created == {"north": 600, "south": 60}
    users = get_user_model().objects
    for tenant in ("north", "south"):
        user = users.get(username=tenant)
        assert user.check_password(tenant) and user.is_staff and not user.is_superuser
        assert Member.objects.get(user=user).tenant == tenant
        assert user.has_perm("orders.export_order")
        for model in ("reportrun", "reportaudit", "reportlimits"):
            assert user.has_perm(f"litejobs.view_{model}")
        assert not user.has_perm("orders.view_order")  # the orders' pages show every tenant
        history = history_of(tenant)
        assert history.count() == HISTORY[tenant]
        oldest = clock.now() - history.earliest("created_at").created_at
        assert timedelta(days=59) < oldest <= timedelta(days=60, hours=1)
        assert history.filter(created_at__gte=clock.now() - timedelta(hours=1)).count() == 0
        assert set(history.values_list("note", flat=True)) >= set(FORMULA_NOTES.values())
    statuses = history_of("north").values_list("status", flat=True)
    assert set(statuses) == {"paid", "refunded", "pending"}
    # The demo's own flows still place paid orders of north.
    placed = Order.objects.exclude(pk__in=history_of("north")).exclude(pk__in=history_of("south"))
    assert set(placed.values_list("tenant", "status")) == {("north", "paid")}

    user = users.get(username="south")
    user.set_password("changed")
    user.save()
    user.member.delete()
    second = seed_demo_data()
    assert second.tenants == type(second.tenants)()  # nothing created again
    assert Order.objects.count() == len(load_order_fixture()) + sum(HISTORY.values())
    user.refresh_from_db()
    assert user.check_password("south") and Member.objects.get(user=user).tenant == "south"


# The shop page -----------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_shop_page_places_an_order_and_shows_its_receipt_job_run(client, clock, run_worker):
    response = client.post("/", {"customer_email": "eve@example.com", "total": "12.30"})
    assert response.status_code == 302
    order = Order.objects.get(customer_email="eve@example.com")
    job = Job.objects.get(name=send_receipt.name, key=f"receipt:{order.pk}")

    page = client.get("/").content.decode()
    assert f"#{order.pk}" in page
    assert "Ready" in page
    assert 'http-equiv="refresh"' in page  # a receipt is pending: the page follows it

    assert run_worker() == {"done": 1}
    page = client.get("/").content.decode()
    assert "sent 12:00:00 UTC" in page  # the worker stamped it at the frozen clock's time
    assert f"#{job.pk} · done · attempt 1" in page
    assert 'http-equiv="refresh"' not in page


@pytest.mark.django_db
def test_the_shop_page_lists_the_orders_placed_before_the_seeded_history(client, clock):
    seed_demo_data()  # the history is seeded after the demo's orders: its ids are higher
    page = client.get("/").content.decode()
    for row in load_order_fixture():
        assert row["customer_email"] in page
    assert "customer000@north.example.com" in page  # then the newest past order


@pytest.mark.django_db
def test_the_shop_page_refuses_an_invalid_order_and_places_nothing(client):
    response = client.post("/", {"customer_email": "not-an-email", "total": "-1"})
    assert response.status_code == 400
    assert b"Enter a valid email address." in response.content
    assert not Order.objects.exists()
    assert not Job.objects.exists()


# The port check ----------------------------------------------------------------------------


def test_a_busy_port_is_refused_with_the_fix_named():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with pytest.raises(DemoError, match=rf"Port {port} on 127.0.0.1 is busy.*--port"):
            DemoRunner(port=port).check_port()
    DemoRunner(port=port).check_port()  # free again once the listener is closed


# The newcomer path: what `make demo` starts, end to end -----------------------------------


def postmaster(data_dir: Path) -> dict | None:
    """The embedded server's pid and socket from ``postmaster.pid``, read without touching it.

    (``project.database.embedded_url`` would register this test process with the server.)
    """
    try:
        lines = (data_dir / "postmaster.pid").read_text().splitlines()
    except FileNotFoundError:
        return None
    return {"pid": int(lines[0]), "port": int(lines[3]), "socket_dir": lines[4].strip()}


def http_status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - http://127.0.0.1
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None


def place_order_through_the_page(base: str) -> int:
    """Do what a visitor does: load the shop, submit the form; answers the new order's id."""
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
    )
    page = opener.open(base + "/", timeout=10).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = {"csrfmiddlewaretoken": token, "customer_email": "newcomer@example.com", "total": "9.99"}
    request = urllib.request.Request(  # noqa: S310 - http://127.0.0.1
        base + "/", data=urllib.parse.urlencode(form).encode(), headers={"Referer": base + "/"}
    )
    landed = opener.open(request, timeout=10).read().decode()  # follows the redirect to /
    return int(re.search(r"Placed order #(\d+)", landed).group(1))


def alive(process: psutil.Process) -> bool:
    """Running and not a zombie (a zombie has exited; only its parent's reaping is left)."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def command_line(process: psutil.Process) -> str:
    """The process's command line; empty once it has exited (a backend may exit any time)."""
    try:
        return " ".join(process.cmdline())
    except psutil.NoSuchProcess:  # includes ZombieProcess
        return ""


def processes_mentioning(text: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if any(text in part for part in process.info["cmdline"] or ()) and alive(process):
            found.append(process)
    return found


def demo_processes(demo_pid: int, data_dir: Path) -> list[psutil.Process]:
    """The demo, its children, and the embedded PostgreSQL server with its backends."""
    demo = psutil.Process(demo_pid)
    found = [demo, *demo.children(recursive=True)]
    server = postmaster(data_dir)
    if server:
        main = psutil.Process(server["pid"])
        found += [main, *main.children(recursive=True)]
    return [process for process in found if alive(process)]


def kill_everything(processes: list[psutil.Process]) -> None:
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()


@pytest.mark.slow
def test_make_demo_serves_the_shop_runs_receipts_and_ctrl_c_stops_every_process(tmp_path):
    home = Path(tempfile.mkdtemp(prefix="lj"))  # short: the server's socket lives in it
    data_dir = home / "pgdata"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    env |= {
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "LITEJOBS_HOME": str(home),
        "PYTHONUNBUFFERED": "1",
    }
    log_path = tmp_path / "demo.log"
    started: list[psutil.Process] = []
    with log_path.open("w") as log:
        demo = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "demo", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def output() -> str:
        return log_path.read_text()

    try:
        wait_for(
            lambda: demo.poll() is not None or http_status(base + "/admin/login/") == 200,
            timeout=180,
            what="the demo's admin login page",
        )
        assert demo.poll() is None, output()
        wait_for(lambda: "Press Ctrl-C" in output(), timeout=10, what="the demo's banner")
        assert f"Admin: {base}/admin/  (admin/admin, ops/ops)" in output()
        assert f"embedded PostgreSQL in {data_dir} (started for this demo)" in output()

        order_id = place_order_through_the_page(base)
        server = postmaster(data_dir)
        assert server is not None, "the demo did not start its own embedded PostgreSQL"
        with psycopg.connect(
            host=server["socket_dir"], port=server["port"], user="postgres", dbname="litejobs"
        ) as conn:

            def receipts() -> list[tuple]:
                conn.rollback()  # a fresh snapshot each poll
                return conn.execute(
                    "SELECT o.id, o.receipt_sent_at IS NOT NULL, j.state FROM orders_order o "
                    "JOIN litejobs_job j ON j.key = 'receipt:' || o.id ORDER BY o.id"
                ).fetchall()

            wait_for(
                lambda: receipts() and all(sent for _, sent, _ in receipts()),
                timeout=60,
                what="every receipt job to run",
            )
            rows = receipts()

            def webhooks_received() -> int:
                conn.rollback()
                return conn.execute("SELECT count(*) FROM partners_receivedwebhook").fetchone()[0]

            # Every order's orders.paid event went through the outbox relay (in the worker) to
            # the partner's view, which verified its signature and stored it once.
            wait_for(
                lambda: webhooks_received() == len(rows),
                timeout=60,
                what="the partner to receive every orders.paid webhook",
            )

            def catalog_import() -> tuple | None:
                conn.rollback()
                return conn.execute(
                    "SELECT state, accepted, dropped, refused FROM litejobs_importrun "
                    "WHERE pipeline = 'catalog.vendor'"
                ).fetchone()

            # Seeding copied the vendor's CSV into the media storage and queued its import
            # once: the worker ran it, so the drops by reason are there at first start.
            wait_for(
                lambda: (catalog_import() or ("",))[0] == "done",
                timeout=60,
                what="the vendor catalog's import",
            )
            assert catalog_import() == ("done", 252, 53, 3)
        assert (home / "media" / "feeds" / "vendor_catalog.csv").exists()
        assert f"Catalog: {base}/admin/catalog/product/" in output()
        pipeline = f"{base}/admin/litejobs/ingestcount/pipeline/catalog.vendor/"
        assert f"Pipeline: {pipeline}  (import feeds/vendor_catalog.csv again" in output()
        assert [row[0] for row in rows][-1] == order_id
        assert len(rows) == len(load_order_fixture()) + 1
        assert {state for _, _, state in rows} == {"done"}
        assert f"Subject: Your receipt for order #{order_id}" in output()

        started = demo_processes(demo.pid, data_dir)
        commands = [command_line(process) for process in started]
        assert any("runserver" in command for command in commands), commands
        assert any("runworker" in command for command in commands), commands
        assert any(str(data_dir) in command for command in commands), commands

        demo.send_signal(signal.SIGINT)
        assert demo.wait(timeout=120) == 0, output()
        wait_for(
            lambda: not any(alive(process) for process in started),
            timeout=30,
            what="every process the demo started to exit",
        )
        assert processes_mentioning(str(home)) == []
        assert not (data_dir / "postmaster.pid").exists()
        assert "Stopped the embedded PostgreSQL." in output()
        assert "worker stopped (exit code 0)." in output()
    finally:
        leftovers = list(started)
        if demo.poll() is None:  # the test failed: leave nothing running behind it
            with contextlib.suppress(psutil.NoSuchProcess):
                leftovers += demo_processes(demo.pid, data_dir)
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait()
        kill_everything(leftovers + processes_mentioning(str(home)))
        shutil.rmtree(home, ignore_errors=True)


# Production mode and the metrics endpoint -------------------------------------------------


def manage(*args: str, **environ: str) -> subprocess.CompletedProcess:
    """``manage.py ARGS`` with the demo's own settings and ``environ`` (no DEBUG, and a
    DATABASE_URL no check connects to, so no database is started)."""
    env = {key: value for key, value in os.environ.items() if key not in ("DEBUG", "PRODUCTION")}
    env |= {
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "DATABASE_URL": "postgres://litejobs@127.0.0.1:9/unused",
        **environ,
    }
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


PRODUCTION = {
    "PRODUCTION": "true",
    "SECRET_KEY": "k3Y-" + "x7Qm2P9vLr4Wz8Ns1Bd6Fh0Tj5Gc3Ka" * 2,
    "DEMO_WEBHOOK_SECRET": "whsec_" + "p4Rt9eRs3cR3t7Xq2Mz8Wn1Lk6Jb0Vf5",
    "ALLOWED_HOSTS": "shop.example.com",
}


def test_the_production_settings_pass_check_deploy_with_no_warning():
    done = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout
    # The development settings are not production-ready, and check --deploy says so.
    dev = manage("check", "--deploy", "--fail-level", "WARNING")
    assert dev.returncode != 0 and "security.W008" in dev.stderr


def test_loopback_webhook_hosts_are_allowed_only_outside_production():
    show = "from django.conf import settings; print(settings.LITEJOBS['WEBHOOK_ALLOWED_HOSTS'])"
    development = manage("shell", "-c", show)
    assert development.returncode == 0, development.stderr
    assert "127.0.0.1" in development.stdout  # make demo delivers to its own partner view
    production = manage("shell", "-c", show, **PRODUCTION)
    assert production.returncode == 0, production.stderr
    assert production.stdout.strip().splitlines()[-1] == "[]"  # the address policy applies


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ({"SECRET_KEY": ""}, "SECRET_KEY"),
        ({"SECRET_KEY": "litejobs-demo-not-secret"}, "SECRET_KEY"),
        ({"DEMO_WEBHOOK_SECRET": ""}, "DEMO_WEBHOOK_SECRET"),
        ({"DEBUG": "true"}, "DEBUG"),
    ],
)
def test_production_refuses_the_demos_well_known_secrets_and_debug(override, named):
    environ = {**PRODUCTION, **override}
    done = manage("check", **{k: v for k, v in environ.items() if v})
    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr and named in done.stderr
    assert PRODUCTION["SECRET_KEY"] not in done.stderr


@pytest.mark.django_db
def test_metrics_need_their_permission_or_the_bearer_token(client, settings):
    anonymous = client.get("/metrics")
    assert anonymous.status_code == 401
    assert anonymous["WWW-Authenticate"].startswith("Bearer")
    assert b"litejobs_" not in anonymous.content

    client.force_login(UserFactory(username="shopper", is_staff=False))
    assert client.get("/metrics").status_code == 403
    client.force_login(UserFactory(username="exporter"))  # staff, as a tenant's exporter is
    assert client.get("/metrics").status_code == 403
    client.force_login(UserFactory(username="ops2", permissions=["litejobs.view_metrics"]))
    staff = client.get("/metrics")
    assert staff.status_code == 200 and staff["Content-Type"].startswith("text/plain")
    client.logout()

    token = "m3tr1cs-" + "Tq8Vz2Lw5Nb9Kc4Xr7Jp1Hs6" * 2
    settings.LITEJOBS = {"METRICS_TOKEN": token}
    scraped = client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
    assert scraped.status_code == 200 and b"litejobs_" in scraped.content
    for wrong in (f"Bearer {token[:-1]}", f"Basic {token}", "Bearer "):
        assert client.get("/metrics", headers={"Authorization": wrong}).status_code == 401
    assert client.get("/metrics").status_code == 401

    settings.LITEJOBS = {"METRICS_TOKEN": "short"}  # unusable: grants nothing (and E060)
    assert client.get("/metrics", headers={"Authorization": "Bearer short"}).status_code == 401
    from django.core.checks import run_checks

    [error] = [e for e in run_checks(tags=["litejobs"]) if e.id == "litejobs.E060"]
    assert "short" not in error.msg and "5 characters" in error.msg
