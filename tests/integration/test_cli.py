"""``manage.py litejobs`` verbs: output, ``--json`` and the documented exit codes."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from litejobs.models import Job, JobAttempt, JobState, QueueState
from tests.factories import JobAttemptFactory, JobFactory, UserFactory, WorkerFactory
from tests.testapp.jobs import charge_card, record

pytestmark = pytest.mark.django_db


def litejobs(*args):
    """Run ``manage.py litejobs ARGS``; answers (stdout, stderr) of a successful (0) run."""
    out, err = StringIO(), StringIO()
    call_command("litejobs", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def failing(code, *args):
    """Run a verb that must exit with ``code``; answers (stdout, stderr)."""
    out, err = StringIO(), StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("litejobs", *args, stdout=out, stderr=err)
    assert exited.value.code == code
    return out.getvalue(), err.getvalue()


# list / show -------------------------------------------------------------------------------


def test_list_filters_and_limits(clock):
    ready = [JobFactory(label=f"r{i}") for i in range(3)]
    dead = JobFactory(state=JobState.DEAD, label="dead")
    out, _ = litejobs("list", "--json")
    rows = json.loads(out)
    assert [row["id"] for row in rows] == [dead.id, *(j.id for j in reversed(ready))]
    assert set(rows[0]) == {"id", "name", "queue", "state", "attempts", "max_attempts", "run_at"}
    assert rows[0]["run_at"] == clock.now().isoformat()

    rows = json.loads(litejobs("list", "--state", "dead", "--json")[0])
    assert [row["id"] for row in rows] == [dead.id]
    rows = json.loads(litejobs("list", "--state", "dead", "--state", "ready", "--json")[0])
    assert len(rows) == 4
    rows = json.loads(litejobs("list", "--limit", "2", "--json")[0])
    assert len(rows) == 2
    assert json.loads(litejobs("list", "--queue", "other", "--json")[0]) == []
    rows = json.loads(litejobs("list", "--name", "testapp.record", "--json")[0])
    assert len(rows) == 4

    out, _ = litejobs("list", "--state", "dead")
    assert out.splitlines()[0].split() == ["id", "name", "queue", "state", "attempts", "run_at"]
    assert out.splitlines()[1].split()[:4] == [str(dead.id), "testapp.record", "default", "dead"]


def test_list_refuses_a_limit_out_of_bounds(clock):
    for bad in ("0", "1001", "many"):
        with pytest.raises(CommandError, match="--limit"):
            litejobs("list", "--limit", bad)


@pytest.mark.django_db(transaction=True)
def test_show_prints_the_row_and_its_history_with_the_payload_redacted(clock, run_worker):
    enqueued = charge_card.enqueue(card_number="4111111111111111")
    run_worker()
    out, _ = litejobs("show", str(enqueued.id), "--json")
    data = json.loads(out)
    assert "4111111111111111" not in out
    assert data["payload"] == {"card_number": "[redacted]"}
    assert (data["id"], data["state"], data["error_class"]) == (
        enqueued.id,
        "dead",
        "builtins.ValueError",
    )
    for column in ("lease_owner", "fence", "finished_at", "key", "max_attempts", "progress"):
        assert column in data
    [attempt] = data["failed_attempts"]
    assert (attempt["number"], attempt["outcome"]) == (1, "failed")

    text, _ = litejobs("show", str(enqueued.id))
    assert "4111111111111111" not in text
    assert "[redacted]" in text and "failed attempts: 1" in text


def test_show_blanks_sensitive_values_out_of_the_result_and_progress(clock):
    card = "4111111111111111"
    job = JobFactory(
        name=charge_card.name,
        payload={"card_number": card},
        state=JobState.DONE,
        result={"receipt": f"charged {card}"},
        progress={"done": 1, "total": 1, "note": f"charging {card}"},
    )
    out, _ = litejobs("show", str(job.id), "--json")
    data = json.loads(out)
    assert card not in out
    assert data["result"] == {"receipt": "charged [redacted]"}
    assert data["progress"]["note"] == "charging [redacted]"
    text, _ = litejobs("show", str(job.id))
    assert card not in text and "charging [redacted]" in text


def test_show_of_a_missing_job_exits_1(clock):
    _, err = failing(1, "show", "424242")
    assert err.startswith("[job-not-found] No job has id 424242")


# retry / cancel / promote ------------------------------------------------------------------


def test_retry_exits_0_and_refusals_exit_1_with_the_code(clock):
    dead = JobFactory(state=JobState.DEAD, label="d")
    out, _ = litejobs("retry", str(dead.id), "--by", "alice", "--json")
    assert json.loads(out) == {
        "job_id": dead.id,
        "action": "retried",
        "state": "ready",
        "message": f"Job {dead.id} is ready to run again.",
    }
    assert Job.objects.get(pk=dead.id).state == JobState.READY
    _, err = failing(1, "retry", str(dead.id))
    assert err.startswith(f"[retry-refused] Job {dead.id} is ready")


def test_cancel_and_promote(clock):
    scheduled = JobFactory(state=JobState.SCHEDULED, label="s")
    running = JobFactory(state=JobState.RUNNING, label="r")
    out, _ = litejobs("promote", str(scheduled.id))
    assert "due now" in out
    assert Job.objects.get(pk=scheduled.id).run_at == clock.now()
    out, _ = litejobs("cancel", str(scheduled.id), "--json")
    assert json.loads(out)["action"] == "cancelled"
    out, _ = litejobs("cancel", str(running.id), "--json")
    assert json.loads(out)["action"] == "cancel-requested"
    assert Job.objects.get(pk=running.id).cancel_requested
    _, err = failing(1, "cancel", str(scheduled.id))
    assert err.startswith("[cancel-refused]")
    _, err = failing(1, "promote", str(scheduled.id))
    assert err.startswith("[promote-refused]")


def test_key_live_refusal(clock):
    done = JobFactory(state=JobState.DONE, label="k")
    live = record.enqueue(label="k")
    _, err = failing(1, "retry", str(done.id))
    assert err.startswith("[key-live]") and f"job {live.id}" in err


def test_by_defaults_to_the_os_user(clock, monkeypatch, caplog):
    monkeypatch.setattr("getpass.getuser", lambda: "ops-person")
    dead = JobFactory(state=JobState.DEAD)
    with caplog.at_level("INFO", logger="litejobs.jobs.operations"):
        litejobs("retry", str(dead.id))
    assert "by=cli:ops-person" in caplog.text


# pause / resume ----------------------------------------------------------------------------


def test_pause_and_resume(clock):
    out, _ = litejobs("pause", "emails", "--reason", "provider outage", "--by", "dave", "--json")
    assert json.loads(out) == {
        "queue": "emails",
        "paused": True,
        "changed": True,
        "reason": "provider outage",
        "changed_by": "dave",
        "changed_at": clock.now().isoformat(),
        "warnings": [],
    }
    out, _ = litejobs("resume", "emails", "--by", "erin")
    assert out.strip() == "Queue 'emails' is running again."
    state = QueueState.objects.get(name="emails")
    assert (state.paused, state.changed_by) == (False, "erin")


def test_resume_of_a_queue_that_is_not_paused_says_nothing_changed(clock):
    out, _ = litejobs("resume", "emails", "--by", "erin")
    assert out.strip() == "Queue 'emails' was not paused; nothing changed."
    assert not QueueState.objects.exists()
    litejobs("pause", "emails", "--reason", "provider outage", "--by", "dave")
    litejobs("resume", "emails", "--by", "erin")
    out, _ = litejobs("resume", "emails", "--by", "frank", "--json")
    data = json.loads(out)
    assert (data["queue"], data["paused"], data["changed"]) == ("emails", False, False)
    assert QueueState.objects.get(name="emails").changed_by == "erin"


def test_pause_of_a_queue_no_declaration_uses_warns_with_the_close_name(clock):
    _, err = litejobs("pause", "emial", "--reason", "typo", "--by", "dave")
    assert "[queue-unused] pause names queue 'emial'" in err
    assert "Did you mean 'emails'?" in err
    _, err = litejobs("resume", "emails", "--by", "dave")
    assert err == ""


def test_with_json_the_queue_unused_warning_is_in_the_answer(clock):
    out, _ = litejobs("pause", "emial", "--reason", "typo", "--by", "dave", "--json")
    [warning] = json.loads(out)["warnings"]
    assert warning.startswith("[queue-unused] pause names queue 'emial'")
    assert "Did you mean 'emails'?" in warning
    out, _ = litejobs("resume", "emial", "--by", "dave", "--json")
    assert json.loads(out)["warnings"][0].startswith("[queue-unused] resume names queue 'emial'")


@pytest.mark.parametrize("verb", [("pause", "--reason", "x"), ("resume",)])
def test_pause_and_resume_refuse_an_invalid_queue_name_without_a_warning(clock, verb):
    _, err = failing(1, verb[0], "bad queue!", *verb[1:])
    assert err.startswith("[queue-invalid] 'bad queue!' is not a queue name")
    assert "queue-unused" not in err
    out, err = failing(1, verb[0], "bad queue!", *verb[1:], "--json")
    assert json.loads(out)["code"] == "queue-invalid"
    assert not QueueState.objects.exists()


def test_with_json_a_refusal_is_one_json_object_on_stdout(clock):
    out, err = failing(1, "show", "424242", "--json")
    answer = json.loads(out)
    assert set(answer) == {"code", "message"}
    assert answer["code"] == "job-not-found"
    assert answer["message"].startswith("No job has id 424242.")
    assert err == ""
    done = JobFactory(state=JobState.READY, label="r")
    out, _ = failing(1, "retry", str(done.id), "--json")
    assert json.loads(out)["code"] == "retry-refused"


@pytest.mark.parametrize("queues", ["", " , ", "emails,bad queue!"])
def test_runworker_refuses_queues_that_name_no_valid_queue(queues):
    with pytest.raises(CommandError, match=r"--queues: \[queue-invalid\]"):
        call_command("runworker", "--once", "--queues", queues)


def test_pause_without_a_reason_is_bad_usage_and_a_blank_one_is_refused(clock):
    with pytest.raises(CommandError, match="--reason"):
        litejobs("pause", "emails")
    _, err = failing(1, "pause", "emails", "--reason", " ")
    assert err.startswith("[reason-required]")
    assert not QueueState.objects.exists()


# purge / doctor ----------------------------------------------------------------------------


def test_purge(clock, settings):
    settings.LITEJOBS = {"RETENTION": {"done": "1d", "dead": "1d", "cancelled": "1d"}}
    old = JobFactory(state=JobState.DONE, label="old", finished_at=clock.now() - timedelta(days=2))
    JobAttemptFactory(job=old)
    new = JobFactory(state=JobState.DONE, label="new")
    out, _ = litejobs("purge", "--json")
    assert json.loads(out) == {
        "deleted": {"done": 1, "dead": 0, "cancelled": 0},
        "total": 1,
        "outbox": {"messages": 0, "deliveries": 0},
    }
    assert list(Job.objects.values_list("pk", flat=True)) == [new.id]
    assert not JobAttempt.objects.exists()
    out, _ = litejobs("purge")
    assert out.strip() == (
        "Purged 0 done, 0 dead, 0 cancelled job(s), 0 outbox message(s), 0 webhook delivery "
        "record(s)."
    )


def test_doctor_is_0_when_healthy_and_3_with_a_dead_job(clock):
    out, _ = litejobs("doctor", "--json")
    assert json.loads(out)["healthy"] is True
    out, _ = litejobs("doctor")
    assert out.strip() == "healthy"

    dead = JobFactory(state=JobState.DEAD, label="dead")
    out, _ = failing(3, "doctor", "--json")
    report = json.loads(out)
    assert report["healthy"] is False
    [problem] = report["problems"]
    assert (problem["code"], problem["job_ids"]) == ("dead-jobs", [dead.id])
    out, _ = failing(3, "doctor")
    assert out.startswith("[dead-jobs] 1 job died in the last day")


def test_doctor_max_ready_age(clock):

    now = clock.now()
    WorkerFactory()
    JobFactory(label="waiting", run_at=now - timedelta(minutes=3))
    litejobs("doctor")  # 3m is under the default 5m
    out, _ = failing(3, "doctor", "--max-ready-age", "2m", "--json")
    assert [p["code"] for p in json.loads(out)["problems"]] == ["ready-backlog"]
    with pytest.raises(CommandError, match="--max-ready-age"):
        litejobs("doctor", "--max-ready-age", "soon")


def doctor_problems() -> dict[str, dict]:
    out, _ = failing(3, "doctor", "--json")
    return {problem["code"]: problem for problem in json.loads(out)["problems"]}


def test_doctors_backlog_and_no_worker_problems_carry_their_job_ids(clock):
    now = clock.now()
    WorkerFactory(queues=["emails"])
    oldest = JobFactory(label="oldest", run_at=now - timedelta(minutes=9))
    newer = JobFactory(label="newer", run_at=now - timedelta(minutes=7))
    JobFactory(label="not due", state=JobState.SCHEDULED, run_at=now + timedelta(minutes=1))
    problems = doctor_problems()
    for code in ("ready-backlog", "no-worker"):
        assert problems[code]["job_ids"] == [oldest.id, newer.id], code
        assert problems[code]["count"] == 2
    assert "2 jobs are due" in problems["no-worker"]["message"]
    assert "job(s)" not in problems["no-worker"]["message"] + problems["ready-backlog"]["message"]


def test_doctor_and_the_dashboard_list_a_job_held_for_an_operator(clock):
    from litejobs.admin.dashboard import dashboard
    from litejobs.jobs.steps import HELD
    from tests.factories import JobStepFactory

    held = JobFactory(state=JobState.WAITING, run_at=HELD, label="held")
    JobStepFactory(job=held, name="charge", state="unknown", once=True, executions=1)
    problem = doctor_problems()["held-for-operator"]
    assert (problem["count"], problem["job_ids"]) == (1, [held.id])
    command = f"`manage.py litejobs resolve-step {held.id} charge --ran|--not-ran`"
    assert command in problem["message"]
    assert problem["runbook"] == (
        "operating/runbooks/#a-steps-outcome-is-unknown-held-for-operator"
    )
    operator = UserFactory(username="operator", is_superuser=True)
    board = dashboard("admin", operator)["problems"]
    [shown] = [p for p in board if p.code == "held-for-operator"]
    [listed] = [action for action in shown.actions if action.kind == "problem-jobs"]
    assert str(held.id) in listed.url and "1 job is held for an operator" in shown.text


def test_json_answers_one_object_when_a_system_check_fails(clock):
    from litejobs import bulk

    bulk.bulk_money_action(
        "tests.amount-only",
        queue="payouts",
        amount=lambda row: (row.amount, row.currency),
        execute=lambda row, run: None,
        permission="testapp.release_payout",
    )
    out, err = StringIO(), StringIO()
    try:
        with pytest.raises(SystemExit) as exited:
            call_command("litejobs", "list", "--json", skip_checks=False, stdout=out, stderr=err)
    finally:
        bulk.unregister("tests.amount-only")
    assert exited.value.code == 1
    answer = json.loads(out.getvalue())  # one object, nothing else on stdout
    assert answer["code"] == "checks-failed" and "litejobs.E013" in answer["message"]
    [check] = answer["checks"]
    assert (check["id"], check["level"]) == ("litejobs.E013", "ERROR")
    assert "[bulk-binding-missing]" in check["message"] and "bind=" in check["hint"]
    out = StringIO()
    call_command("litejobs", "list", "--json", skip_checks=False, stdout=out, stderr=StringIO())
    assert json.loads(out.getvalue()) == []
