"""Fenced locks across real processes: contention, a paused holder's late write refused by its
token, a killed holder's lock freed when its ttl lapses."""

import os
import signal
import time
from datetime import timedelta
from pathlib import Path

import pytest

import litejobs
from litejobs.models import Lock
from tests.conftest import wait_for
from tests.testapp.models import Mark

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

#: A holder: says it is trying (NAME.trying), takes the lock, writes its token to NAME.token,
#: waits for NAME.go, then writes the ``fenced`` mark under its token (the pattern the how-to
#: shows) and how many rows that changed to NAME.wrote; a lost lock's code goes to NAME.lost.
HOLDER = """
import time
from pathlib import Path

import litejobs
from tests.testapp.models import Mark

folder, name = Path({folder!r}), {name!r}


def put(what, text):
    (folder / f"{{name}}.{{what}}.part").write_text(text)
    (folder / f"{{name}}.{{what}}.part").rename(folder / f"{{name}}.{{what}}")


put("trying", "")
try:
    with litejobs.lock({key!r}, ttl={ttl!r}, wait="30s") as held:
        put("token", str(held.token))
        while not (folder / f"{{name}}.go").exists():
            time.sleep(0.02)
        rows = Mark.objects.filter(label="fenced")
        put("wrote", str(held.update(rows, fence="value", note=name)))
except litejobs.LockLost as lost:
    put("lost", lost.code)
"""


def holder(processes, tmp_path, name, *, key="reconcile", ttl="5s"):
    """Start a holder process (``HOLDER``)."""
    script = HOLDER.format(folder=str(tmp_path), name=name, key=key, ttl=ttl)
    return processes.start("shell", "-c", script, name=name)


def read(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


def test_two_processes_contend_for_one_lock_and_the_second_gets_a_greater_token(
    processes, tmp_path
):
    first = holder(processes, tmp_path, "first")
    first_token = int(wait_for(lambda: read(tmp_path / "first.token"), what="the first hold"))
    second = holder(processes, tmp_path, "second")
    wait_for(lambda: (tmp_path / "second.trying").exists(), what="the second to try")
    time.sleep(1.0)
    assert not (tmp_path / "second.token").exists(), "both held the lock at once"

    (tmp_path / "first.go").touch()
    second_token = int(wait_for(lambda: read(tmp_path / "second.token"), what="the second hold"))
    assert second_token > first_token
    (tmp_path / "second.go").touch()
    assert first.wait(30) == 0, processes.log(first)
    assert second.wait(30) == 0, processes.log(second)
    assert not list(tmp_path.glob("*.lost"))


def test_a_paused_holders_late_write_is_refused_by_its_token(processes, tmp_path):
    Mark.objects.create(label="fenced", value=0)
    paused = holder(processes, tmp_path, "paused", ttl="1s")
    paused_token = int(wait_for(lambda: read(tmp_path / "paused.token"), what="the hold"))
    os.killpg(paused.pid, signal.SIGSTOP)
    try:
        with litejobs.lock("reconcile", ttl="5s", wait="10s") as mine:
            assert mine.token > paused_token
            assert mine.update(Mark.objects.filter(label="fenced"), fence="value", note="mine") == 1
        (tmp_path / "paused.go").touch()
    finally:
        os.killpg(paused.pid, signal.SIGCONT)

    assert wait_for(lambda: read(tmp_path / "paused.wrote"), what="the late write") == "0"
    assert wait_for(lambda: read(tmp_path / "paused.lost"), what="the loss") == "lock-lost"
    assert paused.wait(30) == 0, processes.log(paused)
    mark = Mark.objects.get(label="fenced")
    assert (mark.value, mark.note) == (mine.token, "mine")


def test_a_killed_holders_lock_frees_when_its_ttl_lapses_not_before_not_much_later(
    processes, tmp_path
):
    killed = holder(processes, tmp_path, "killed", ttl="2s")
    killed_token = int(wait_for(lambda: read(tmp_path / "killed.token"), what="the hold"))
    time.sleep(1.0)  # past a renewal
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait(10)
    lapses_at = Lock.objects.get(key="reconcile").expires_at

    with litejobs.lock("reconcile", ttl="5s", wait="10s") as mine:
        taken_at = Lock.objects.get(key="reconcile").acquired_at
    assert mine.token > killed_token
    assert lapses_at <= taken_at <= lapses_at + timedelta(milliseconds=500)
