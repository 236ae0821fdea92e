"""The tutorial's output is what the commands print: its log lines have the worker's and the
scheduler's fields, its counts are litejobs' own, and its command blocks print what the
commands do."""

from __future__ import annotations

import getpass
import logging
import re
import shlex
from io import StringIO

import pytest
from django.core.management import call_command

from litejobs.jobs import catalog
from litejobs.scheduling import declarations
from tests.conftest import ROOT
from tests.testapp.jobs import gives_up, record

TUTORIAL = (ROOT / "docs" / "tutorial.md").read_text()
#: A log line as litejobs prints it without LOGGING: time, level, logger, then the message.
LOG_LINE = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (?:INFO|WARNING|ERROR) (litejobs[\w.]*) (.*)$"
)
#: The tutorial project declares two jobs, then a subscriber, and one schedule.
TUTORIAL_JOBS = (2, 3)
TUTORIAL_SCHEDULES = 1


def text_blocks() -> list[list[str]]:
    """The lines of each ```text block of the tutorial."""
    return [block.splitlines() for block in re.findall(r"```text\n(.*?)```", TUTORIAL, flags=re.S)]


def shape(message: str) -> tuple[str, tuple[str, ...]]:
    """A log message's event (the words before its first ``key=``) and its keys, in order."""
    event = message.split("=", 1)[0].rsplit(" ", 1)[0]
    return event, tuple(re.findall(r"(?:^| )(\w+)=", message))


def tutorial_lines(logger_prefix: str) -> list[tuple[str, str]]:
    """(logger, message) of each log line of the tutorial from loggers under the prefix."""
    found = []
    for block in text_blocks():
        for line in block:
            match = LOG_LINE.match(line)
            if match and match.group(1).startswith(logger_prefix):
                found.append((match.group(1), match.group(2)))
    return found


def counted(lines: list[tuple[str, str]], event: str, key: str) -> list[int]:
    """The values of ``key`` in the tutorial's ``event`` lines."""
    return [
        int(re.search(rf"\b{key}=(\d+)", message).group(1))
        for _, message in lines
        if message.startswith(event)
    ]


@pytest.mark.django_db(transaction=True)
def test_the_tutorials_worker_lines_have_the_fields_a_worker_logs(clock, run_worker, caplog):
    record.enqueue(label="done")
    gives_up.enqueue(label="fails")  # a job end with an error
    caplog.set_level(logging.INFO, logger="litejobs")
    run_worker()
    printed = {(r.name, *shape(r.getMessage())) for r in caplog.records}
    shown = {(name, *shape(message)) for name, message in tutorial_lines("litejobs.worker")}
    assert {event for _, event, _ in shown} == {"worker start", "job start", "job end"}
    assert shown - printed == set()


def test_the_tutorials_counts_are_its_jobs_and_schedules_with_litejobs_own():
    # litejobs' own, as a project has them: not the bench's (declared in its processes, and
    # here by the tests that import them).
    own_jobs = len(
        [
            d
            for d in catalog.all_jobs()
            if d.name.startswith("litejobs.") and not d.name.startswith("litejobs.bench.")
        ]
    )
    own_schedules = len([s for s in declarations.all_schedules() if s.name.startswith("litejobs.")])
    worker = tutorial_lines("litejobs.worker.process")
    assert counted(worker, "worker start", "jobs") == [n + own_jobs for n in TUTORIAL_JOBS]
    scheduler = tutorial_lines("litejobs.scheduling")
    assert counted(scheduler, "scheduler start", "schedules") == [
        TUTORIAL_SCHEDULES + own_schedules
    ]
    assert f"`jobs={TUTORIAL_JOBS[0] + own_jobs}`: your two jobs and" in TUTORIAL


@pytest.mark.django_db
@pytest.mark.parametrize("verb", ["pause", "resume"])
def test_the_tutorials_pause_and_resume_print_what_the_commands_print(clock, verb):
    """Each ``$ python manage.py litejobs pause|resume ...`` block shows the command's output
    (the acting user as the tutorial's ``root``)."""
    [block] = [b for b in text_blocks() if b[0].startswith(f"$ python manage.py litejobs {verb}")]
    if verb == "resume":
        call_command("litejobs", "pause", "emails", "--reason", "r", stdout=StringIO())
    out = StringIO()
    call_command(*shlex.split(block[0])[3:], stdout=out, stderr=StringIO())
    printed = out.getvalue().replace(f"cli:{getpass.getuser()}", "cli:root")
    assert printed.splitlines() == block[1:]
