"""Fenced locks in one process: tokens, waits, renewal, loss, statements, transactions, and
the operator's views (CLI, admin, metrics, purge)."""

import json
import threading
import time
from datetime import timedelta
from io import StringIO

import psycopg
import pytest
from django.core.management import call_command
from django.db import transaction

import litejobs
from litejobs.exceptions import InvalidInput
from litejobs.locks import LockLost, LockWaitTimeout, holding, locking, metrics, retention
from litejobs.locks import connections as lock_connections
from litejobs.models import Lock, LockCounter
from litejobs.sql import query as statement
from tests.testapp.models import Mark

pytestmark = pytest.mark.django_db(transaction=True)


def query(sql, params=()):
    """Rows of ``sql`` on a connection of the test's own (apart from Django's and the locks')."""
    with lock_connections.connect("default") as conn:
        return conn.execute(sql, params).fetchall()


def execute(sql, params=()):
    """Run ``sql`` on a connection of the test's own; answers how many rows it changed."""
    with lock_connections.connect("default") as conn:
        return conn.execute(sql, params).rowcount


def held_row(key):
    """(token, held now) of the key's row as another connection sees it, or None."""
    rows = query(
        "SELECT token, released_at IS NULL AND expires_at > now() FROM litejobs_lock "
        "WHERE key = %s",
        (key,),
    )
    return rows[0] if rows else None


def hold_in_thread(key, ttl, release):
    """Hold ``key`` in a thread until ``release`` is set; answers (thread, [the held lock,
    the monotonic instant its block ended])."""
    holding_now, found = threading.Event(), []

    def run():
        with litejobs.lock(key, ttl=ttl) as held:
            found.append(held)
            holding_now.set()
            release.wait(30)
        found.append(time.monotonic())

    thread = threading.Thread(target=run)
    thread.start()
    assert holding_now.wait(10)
    return thread, found


def test_each_holder_gets_a_greater_token_than_every_earlier_one():
    with litejobs.lock("digest:1", ttl="5s") as first:
        assert held_row("digest:1") == (first.token, True)
    with litejobs.lock("digest:1", ttl="5s") as second:
        pass
    with litejobs.lock("digest:2", ttl="5s") as other_key:
        pass
    assert first.token < second.token < other_key.token
    assert isinstance(first.token, int)
    assert not first.lost and not second.lost
    assert held_row("digest:1") == (second.token, False)


def test_a_waiter_takes_the_lock_as_soon_as_the_holder_releases_it():
    release = threading.Event()
    thread, found = hold_in_thread("contended", "30s", release)
    threading.Timer(1.0, release.set).start()
    with litejobs.lock("contended", ttl="30s", wait="10s") as second:
        taken_at = time.monotonic()
    thread.join()
    first, ended_at = found
    assert second.token > first.token
    # The release's NOTIFY woke the waiter: no backoff pause between the release and the take.
    assert taken_at - ended_at < 0.25


def test_wait_bounds_the_wait_for_a_holder_with_a_coded_error():
    release = threading.Event()
    thread, _ = hold_in_thread("busy", "30s", release)
    try:
        started = time.monotonic()
        with pytest.raises(LockWaitTimeout) as waited, litejobs.lock("busy", ttl="5s", wait=0.4):
            pytest.fail("the block ran without the lock")
        assert 0.4 <= time.monotonic() - started < 2
        assert waited.value.code == "lock-wait-timeout"
        assert "pid" in str(waited.value)
        started = time.monotonic()
        for once in (0, None):
            with pytest.raises(LockWaitTimeout), litejobs.lock("busy", ttl="5s", wait=once):
                pytest.fail("the block ran without the lock")
        assert time.monotonic() - started < 0.5
    finally:
        release.set()
        thread.join()


def test_the_hold_is_renewed_past_its_ttl_while_the_block_runs():
    with litejobs.lock("renewed", ttl="2s") as held:
        for _ in range(6):
            time.sleep(0.8)
            assert held_row("renewed") == (held.token, True)
            with pytest.raises(LockWaitTimeout), litejobs.lock("renewed", ttl="2s", wait=0):
                pytest.fail("taken while renewed")
        assert not held.lost
    assert LockCounter.objects.filter(name="lost").first() is None


def test_a_lock_taken_over_after_a_forced_expiry_is_lost_and_the_block_end_raises():
    with pytest.raises(LockLost) as raised, litejobs.lock("stolen", ttl="1s") as held:
        execute("UPDATE litejobs_lock SET expires_at = now() - interval '1 second'")
        with litejobs.lock("stolen", ttl="5s", wait=0) as thief:
            assert thief.token > held.token
            deadline = time.monotonic() + 3
            while not held.lost and time.monotonic() < deadline:
                time.sleep(0.05)
            assert held.lost
            with pytest.raises(LockLost):
                held.check()
    assert raised.value.code == "lock-lost"
    assert LockCounter.objects.get(name="lost").count == 1


def test_a_body_error_is_kept_when_the_lock_was_lost_too():
    with pytest.raises(KeyError) as raised, litejobs.lock("stolen-too", ttl="1s") as held:
        execute("DELETE FROM litejobs_lock")
        while not held.lost:
            time.sleep(0.05)
        raise KeyError("the body's own error")
    assert any("lock-lost" in note for note in raised.value.__notes__)


def test_a_killed_connection_is_replaced_and_the_hold_kept():
    with litejobs.lock("reconnects", ttl="2s") as held:
        query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE pid <> pg_backend_pid() AND application_name = 'litejobs' "
            "AND datname = current_database() AND query LIKE '%%litejobs_lock%%'"
        )
        time.sleep(3)
        assert held_row("reconnects") == (held.token, True)
    assert not held.lost


def test_a_hold_no_renewal_reaches_within_its_ttl_is_lost(monkeypatch):
    def unreachable(alias):
        raise psycopg.OperationalError("the database is out of reach")

    with pytest.raises(LockLost), litejobs.lock("unreachable", ttl="1s") as held:
        taken_at = time.monotonic()
        monkeypatch.setattr(holding, "connect", unreachable)
        query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE pid <> pg_backend_pid() AND application_name = 'litejobs' "
            "AND datname = current_database()"
        )
        while not held.lost and time.monotonic() - taken_at < 5:
            time.sleep(0.01)
        # Lost one ttl after the last renewal that landed: never sooner than the ttl.
        assert 0.9 <= time.monotonic() - taken_at < 3


class Counting(psycopg.Cursor):
    """A cursor counting the statements the locks send."""

    sent: list[str] = []

    def execute(self, query, params=None, **options):
        Counting.sent.append(str(query))
        return super().execute(query, params, **options)


def test_an_uncontended_acquire_and_release_are_two_statements(monkeypatch):
    connect = lock_connections.connect

    def counted(alias):
        conn = connect(alias)
        conn.cursor_factory = Counting
        return conn

    monkeypatch.setattr(lock_connections, "connect", counted)
    Counting.sent = []
    with litejobs.lock("counted", ttl="30s"):
        pass
    with litejobs.lock("counted", ttl="30s"):  # a kept connection, the row taken over
        pass
    assert Counting.sent == [statement("lock_acquire"), statement("lock_release")] * 2


def test_a_lock_inside_the_callers_transaction_is_seen_by_other_hosts_at_once():
    with transaction.atomic():
        Mark.objects.create(label="inside")
        with litejobs.lock("atomic", ttl="30s") as held:
            assert held_row("atomic") == (held.token, True)
            assert query("SELECT count(*) FROM testapp_mark")[0][0] == 0
        assert held_row("atomic") == (held.token, False)
        raise_rollback = True
        transaction.set_rollback(raise_rollback)
    # The caller's rollback undoes its own writes, never the lock's.
    assert held_row("atomic") == (held.token, False)


def test_the_fenced_update_refuses_a_write_after_a_later_holder_wrote():
    mark = Mark.objects.create(label="fenced", value=0)
    rows = Mark.objects.filter(pk=mark.pk)
    with litejobs.lock("fenced", ttl="30s") as early:
        pass
    with litejobs.lock("fenced", ttl="30s") as late:
        assert late.update(rows, fence="value", note="late") == 1
        assert late.update(rows, fence="value", note="late again") == 1
    assert early.update(rows, fence="value", note="early") == 0
    mark.refresh_from_db()
    assert (mark.value, mark.note) == (late.token, "late again")


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({"key": ""}, "lock-key-invalid"),
        ({"key": "k" * 201}, "lock-key-invalid"),
        ({"key": 42}, "lock-key-invalid"),
        ({"key": "nul\x00"}, "lock-key-invalid"),
        ({"ttl": "500ms"}, "lock-ttl-invalid"),
        ({"ttl": "2d"}, "lock-ttl-invalid"),
        ({"ttl": "soon"}, "lock-ttl-invalid"),
        ({"ttl": None}, "lock-ttl-invalid"),
        ({"wait": -1}, "lock-wait-invalid"),
        ({"wait": "2d"}, "lock-wait-invalid"),
        ({"wait": "later"}, "lock-wait-invalid"),
    ],
)
def test_a_key_ttl_or_wait_that_cannot_work_is_refused_before_anything_is_written(options, code):
    given = {"key": "valid", "ttl": "5s", **options}
    with pytest.raises(InvalidInput) as refused, litejobs.lock(given.pop("key"), **given):
        pytest.fail("the block ran")
    assert refused.value.code == code
    assert not Lock.objects.exists()


def test_the_operator_sees_held_locks_in_the_cli_the_admin_and_the_metrics(admin_client):
    with litejobs.lock("shown", ttl="30s") as held:
        out = StringIO()
        call_command("litejobs", "locks", "--json", stdout=out)
        [row] = json.loads(out.getvalue())
        assert (row["key"], row["token"], row["state"]) == ("shown", held.token, "held")
        assert row["pid"] and row["host"] and row["acquired_at"] and row["expires_at"]
        families = {family.name: family for family in metrics.families(now=None)}
        assert families["litejobs_locks_held"].samples == [((), 1)]
        page = admin_client.get("/admin/litejobs/lock/?state=held")
        assert page.status_code == 200 and b"shown" in page.content
        # Whether a block waited reads as a word; Django's red icon would read as an error.
        assert b"waited for" in page.content.lower() and b"icon-no" not in page.content
    out = StringIO()
    call_command("litejobs", "locks", stdout=out)
    assert "No lock is held." in out.getvalue()
    out = StringIO()
    call_command("litejobs", "locks", "--all", stdout=out)
    assert "released" in out.getvalue()
    assert admin_client.get("/admin/litejobs/lock/?state=held").content.count(b"shown") == 0
    families = {family.name: family for family in metrics.families(now=None)}
    assert families["litejobs_locks_lost"].samples == [((), 0)]


def test_the_purge_deletes_keys_no_block_held_for_a_day():
    with litejobs.lock("old", ttl="5s"):
        pass
    with litejobs.lock("recent", ttl="5s"):
        pass
    execute(
        "UPDATE litejobs_lock SET expires_at = expires_at - %s, released_at = released_at - %s "
        "WHERE key = 'old'",
        (retention.KEPT_FOR * 2, retention.KEPT_FOR * 2),
    )
    assert retention.purge() == {"locks": 1}
    assert list(Lock.objects.values_list("key", flat=True)) == ["recent"]


def test_the_wait_defaults_to_one_ttl():
    assert locking._checked("k", "3s", locking.ONE_TTL)[2] == timedelta(seconds=3)
