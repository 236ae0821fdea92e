"""The schedule runbook from both surfaces — CLI and admin — plus overdue detection (admin
flag, ``doctor``, metrics)."""

import json
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.contrib.messages import get_messages
from django.core.management import CommandError, call_command
from django.urls import reverse

from litejobs.core.enums import OperatorVerb
from litejobs.exceptions import TransitionRefused
from litejobs.models import (
    Job,
    LeaderLease,
    LeaderRole,
    Occurrence,
    OccurrenceReplay,
    OperatorAction,
    Schedule,
)
from litejobs.scheduling import operations as schedules
from litejobs.scheduling.health import health
from tests.factories import UserFactory
from tests.testapp.jobs import scheduled_mark

pytestmark = pytest.mark.django_db(transaction=True)

SCHEDULES = reverse("admin:litejobs_schedule_changelist")
OCCURRENCES = reverse("admin:litejobs_occurrence_changelist")


def litejobs(*args):
    out, err = StringIO(), StringIO()
    call_command("litejobs", *args, stdout=out, stderr=err)
    return out.getvalue()


def failing(code, *args):
    out, err = StringIO(), StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("litejobs", *args, stdout=out, stderr=err)
    assert exited.value.code == code
    return out.getvalue(), err.getvalue()


def scrape(text: str) -> dict[str, float]:
    """Prometheus text format as {series: value}."""
    series = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            series[name] = float(value)
    return series


def doctor() -> dict:
    """``doctor --json`` whatever its exit code (0 healthy, 3 problems)."""
    out = StringIO()
    try:
        call_command("litejobs", "doctor", "--json", stdout=out, stderr=StringIO())
    except SystemExit as exited:
        assert exited.code == 3
    report = json.loads(out.getvalue())
    report["codes"] = {p["code"] for p in report["problems"]}
    return report


def texts(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


@pytest.fixture
def hourly(clock, declare, scheduler, run_worker):
    """``t.hourly`` declared, synced at 12:00, its 13:00 occurrence completed (clock: 13:00)."""
    declare("t.hourly", job=scheduled_mark, every="1h", grace="5m", args={"label": "h"})
    plans = scheduler("t.hourly")
    plans.step()
    clock.advance("1h")
    plans.step()
    run_worker()
    plans.occurrence = Occurrence.objects.get(schedule__name="t.hourly")
    return plans


# Inspect -----------------------------------------------------------------------------------


def test_schedule_show_and_list(hourly, clock):
    data = json.loads(litejobs("schedule", "show", "t.hourly", "--json"))
    assert data["timetable"] == "every 1h (UTC)"
    assert data["next_runs"] == [f"2026-03-01T{h}:00:00+00:00" for h in range(14, 19)]
    assert data["last_success_at"] == "2026-03-01T13:00:00+00:00"
    assert data["overdue"] is False and data["enabled"] is True
    assert data["idempotency"].startswith("occurrence:t.hourly:")
    assert data["operating_owner"] == "ops@example.com" and data["misfire"] == "run_once"
    [recent] = data["recent_occurrences"]
    assert recent["state"] == "completed" and recent["attempts"] == 1
    assert recent["scheduled_for"] == recent["started_at"] == recent["completed_at"]
    assert {step["command"] for step in data["runbook"]} >= {
        "manage.py litejobs schedule show t.hourly",
        'manage.py litejobs disable t.hourly --reason "..."',
        "manage.py litejobs enable t.hourly",
    }
    assert data["leader"]["live"] is True
    text = litejobs("schedule", "show", "t.hourly")
    assert "runbook:" in text and "completed" in text and "manage.py litejobs replay" in text

    rows = {row["name"]: row for row in json.loads(litejobs("schedule", "list", "--json"))}
    assert rows["t.hourly"]["next_run"] == "2026-03-01T14:00:00+00:00"
    assert "t.hourly" in litejobs("schedule", "list")
    _, err = failing(1, "schedule", "show", "nope")
    assert "[schedule-not-found]" in err


# Replay, disable, enable from the CLI ------------------------------------------------------


def test_replay_disable_and_enable_from_the_cli(hourly, clock, run_worker):
    occurrence = hourly.occurrence
    with pytest.raises(CommandError, match="--reason"):
        litejobs("replay", str(occurrence.id))
    data = json.loads(
        litejobs("replay", str(occurrence.id), "--reason", "fix", "--by", "alice", "--json")
    )
    assert data["occurrence_id"] == occurrence.id
    assert data["scheduled_for"] == "2026-03-01T13:00:00+00:00"
    _, err = failing(1, "replay", str(occurrence.id), "--reason", "again")
    assert "[replay-refused]" in err
    run_worker()
    audit = OccurrenceReplay.objects.get()
    assert (audit.requested_by, audit.reason) == ("alice", "fix")

    data = json.loads(
        litejobs("disable", "t.hourly", "--reason", "vendor outage", "--by", "bob", "--json")
    )
    assert (data["enabled"], data["reason"], data["changed_by"]) == (False, "vendor outage", "bob")
    assert "already claimed by a worker finishes" in litejobs(
        "disable", "t.hourly", "--reason", "still"
    )
    clock.advance("2h")
    assert hourly.step().planned == 0
    assert json.loads(litejobs("enable", "t.hourly", "--json"))["enabled"] is True
    _, err = failing(1, "disable", "nope", "--reason", "x")
    assert "[schedule-not-found]" in err
    _, err = failing(1, "replay", "999999", "--reason", "x")
    assert "[occurrence-not-found]" in err


def action_log() -> list[tuple]:
    return list(
        OperatorAction.objects.order_by("pk").values_list(
            "verb", "by", "user_id", "reason", "filter", "change", "job_ids"
        )
    )


def test_replay_disable_and_enable_are_in_the_operator_action_log(hourly, clock, run_worker):
    occurrence = hourly.occurrence
    replayed = schedules.replay(occurrence.id, reason="fix", by="alice")
    schedules.disable("t.hourly", reason="vendor outage", by="bob")
    schedules.enable("t.hourly", by="carol", reason="vendor back")
    schedules.enable("t.hourly", by="carol")  # already enabled: nothing changes, nothing logged
    assert action_log() == [
        (
            OperatorVerb.SCHEDULE_REPLAY,
            "alice",
            None,
            "fix",
            {"schedule": "t.hourly", "occurrence": occurrence.id},
            {},
            [replayed.job_id],
        ),
        (
            OperatorVerb.SCHEDULE_DISABLE,
            "bob",
            None,
            "vendor outage",
            {"schedule": "t.hourly", "skipped_occurrences": []},
            {"enabled": [True, False]},
            [],
        ),
        (
            OperatorVerb.SCHEDULE_ENABLE,
            "carol",
            None,
            "vendor back",
            {"schedule": "t.hourly"},
            {"enabled": [False, True]},
            [],
        ),
    ]


def test_a_refused_replay_leaves_no_operator_action(hourly, clock):
    schedules.replay(hourly.occurrence.id, reason="fix", by="alice")
    with pytest.raises(TransitionRefused):
        schedules.replay(hourly.occurrence.id, reason="again", by="alice")
    assert OperatorAction.objects.count() == 1


def test_the_admins_schedule_verbs_log_the_user(hourly, clock, client, admin_user):
    client.force_login(admin_user)
    row = Schedule.objects.get(name="t.hourly")
    client.post(
        reverse("admin:litejobs_schedule_disable", args=[row.pk]), {"apply": "1", "reason": "audit"}
    )
    client.post(reverse("admin:litejobs_schedule_enable", args=[row.pk]))
    replay = reverse("admin:litejobs_occurrence_replay", args=[hourly.occurrence.pk])
    client.post(replay, {"apply": "1", "reason": "rerun"})
    assert [(verb, by, user, reason) for verb, by, user, reason, *_ in action_log()] == [
        (OperatorVerb.SCHEDULE_DISABLE, "admin", admin_user.pk, "audit"),
        (OperatorVerb.SCHEDULE_ENABLE, "admin", admin_user.pk, ""),
        (OperatorVerb.SCHEDULE_REPLAY, "admin", admin_user.pk, "rerun"),
    ]


def test_run_manual_from_the_cli(clock):
    _, err = failing(1, "run-manual", "tests.reconcile-day", "--reason", "repair", "--by", "eve")
    assert "[manual-refused]" in err and "admin, ops" in err
    data = json.loads(
        litejobs(
            "run-manual",
            "tests.reconcile-day",
            "--reason",
            "data repair",
            "--by",
            "ops",
            "--args",
            '{"day": "2026-02-28"}',
            "--json",
        )
    )
    assert Job.objects.get(pk=data["job_id"]).key == "reconcile:2026-02-28"


# Overdue: admin flag, doctor, metrics ------------------------------------------------------


def test_a_schedule_without_a_success_within_its_period_plus_grace_is_overdue(
    hourly, clock, client, admin_user
):
    row = Schedule.objects.get(name="t.hourly")
    clock.set(row.last_success_at.replace(hour=14, minute=4))  # 14:00 due, within its grace
    hourly.step()  # the scheduler runs (it plans 14:00; no worker runs it)
    assert not health(row, clock.now()).overdue
    assert "overdue-schedule" not in doctor()["codes"]
    clock.set(row.last_success_at.replace(hour=14, minute=6))  # 14:00 + 5m grace passed
    hourly.step()
    state = health(row, clock.now())
    assert state.overdue and state.expected == row.last_success_at.replace(hour=14)

    out, _ = failing(3, "doctor", "--json")
    [problem] = [p for p in json.loads(out)["problems"] if p["code"] == "overdue-schedule"]
    assert problem["schedules"] == ["t.hourly"]
    out, _ = failing(3, "doctor")
    assert "[overdue-schedule]" in out and "t.hourly" in out

    client.force_login(admin_user)
    assert "OVERDUE" in client.get(SCHEDULES).content.decode()
    response = client.get("/metrics")
    assert response["Content-Type"].startswith("text/plain")
    metrics = scrape(response.content.decode())
    assert metrics['litejobs_schedule_overdue{schedule="t.hourly"}'] == 1.0
    last_success = metrics['litejobs_schedule_last_success_timestamp_seconds{schedule="t.hourly"}']
    assert last_success == row.last_success_at.timestamp()
    assert metrics['litejobs_occurrences{schedule="t.hourly",state="completed"}'] == 1.0
    assert metrics['litejobs_schedule_enabled{schedule="t.hourly"}'] == 1.0

    # A scheduler that never runs is an absence too: nobody holds the leader lease.
    clock.advance("1h")
    out, _ = failing(3, "doctor", "--json")
    assert "no-scheduler" in {p["code"] for p in json.loads(out)["problems"]}


def test_a_new_schedule_is_overdue_only_once_an_instant_passed_after_it_became_active(
    clock, declare, scheduler
):
    declare("t.fresh", job=scheduled_mark, cron="0 * * * *", grace="10m")
    scheduler("t.fresh").step()
    row = Schedule.objects.get(name="t.fresh")
    clock.advance("65m")
    assert not health(row, clock.now()).overdue  # 13:00 still within its grace
    clock.advance("6m")
    assert health(row, clock.now()).overdue
    schedules.disable("t.fresh", reason="paused for the migration", by="alice")
    row.refresh_from_db()
    assert not health(row, clock.now()).overdue  # a disabled schedule is not absent
    report = doctor()
    assert "overdue-schedule" not in report["codes"]
    assert any("paused for the migration" in note for note in report["notes"])


# The admin ---------------------------------------------------------------------------------


def test_the_schedule_page_shows_runs_state_and_the_runbook(hourly, clock, client, admin_user):
    client.force_login(admin_user)
    listing = client.get(SCHEDULES).content.decode()
    assert "t.hourly" in listing and "14:00:00 UTC" in listing
    row = Schedule.objects.get(name="t.hourly")
    page = client.get(reverse("admin:litejobs_schedule_change", args=[row.pk]))
    content = page.content.decode()
    assert page.status_code == 200
    for hour in range(14, 19):
        assert f"{hour}:00:00 UTC" in content  # the next five runs, as every page writes times
    for command in (
        "manage.py litejobs schedule show t.hourly",
        "manage.py litejobs replay OCCURRENCE_ID",
        "manage.py litejobs disable t.hourly",
        "manage.py litejobs enable t.hourly",
    ):
        assert command in content
    assert reverse("admin:litejobs_schedule_disable", args=[row.pk]) in content
    assert "ops@example.com" in content and "run_once" in content


def test_disable_and_enable_from_the_schedule_page(hourly, clock, client, admin_user):
    client.force_login(admin_user)
    row = Schedule.objects.get(name="t.hourly")
    disable = reverse("admin:litejobs_schedule_disable", args=[row.pk])
    assert 'name="reason"' in client.get(disable).content.decode()
    response = client.post(disable, {"apply": "1", "reason": ""})
    assert response.status_code == 200 and "This field is required" in response.content.decode()
    assert Schedule.objects.get(pk=row.pk).enabled
    response = client.post(disable, {"apply": "1", "reason": "bank holiday"}, follow=True)
    row.refresh_from_db()
    assert (row.enabled, row.state_reason, row.state_changed_by) == (False, "bank holiday", "admin")
    assert any("is disabled" in text for text in texts(response))
    page = client.get(reverse("admin:litejobs_schedule_change", args=[row.pk])).content.decode()
    assert "bank holiday" in page and 'id="schedule-enable"' in page
    client.post(reverse("admin:litejobs_schedule_enable", args=[row.pk]))
    assert Schedule.objects.get(pk=row.pk).enabled


def test_the_disable_action_asks_for_a_reason(hourly, clock, client, admin_user):
    client.force_login(admin_user)
    row = Schedule.objects.get(name="t.hourly")
    selected = {"action": "disable_schedules", "_selected_action": [str(row.pk)]}
    form = client.post(SCHEDULES, selected)
    assert form.status_code == 200 and "Disable schedules" in form.content.decode()
    assert Schedule.objects.get(pk=row.pk).enabled
    client.post(SCHEDULES, {**selected, "apply": "1", "reason": "migration"}, follow=True)
    assert Schedule.objects.get(pk=row.pk).state_reason == "migration"
    client.post(SCHEDULES, {"action": "enable_schedules", "_selected_action": [str(row.pk)]})
    assert Schedule.objects.get(pk=row.pk).enabled


def test_occurrences_in_the_admin_and_the_replay_action(
    hourly, clock, client, admin_user, run_worker
):
    client.force_login(admin_user)
    occurrence = hourly.occurrence
    listing = client.get(OCCURRENCES).content.decode()
    assert "completed" in listing and "t.hourly" in listing
    selected = {"action": "replay_occurrences", "_selected_action": [str(occurrence.pk)]}
    assert 'name="reason"' in client.post(OCCURRENCES, selected).content.decode()
    response = client.post(OCCURRENCES, {**selected, "apply": "1", "reason": "rerun"}, follow=True)
    assert any("is replayed as job" in text for text in texts(response))
    run_worker()
    page = client.get(reverse("admin:litejobs_occurrence_change", args=[occurrence.pk]))
    content = page.content.decode()
    assert "rerun" in content and "manual replays (audit)" in content.lower()
    assert reverse("admin:litejobs_occurrence_replay", args=[occurrence.pk]) in content
    replay = reverse("admin:litejobs_occurrence_replay", args=[occurrence.pk])
    client.post(replay, {"apply": "1", "reason": "once more"})
    assert OccurrenceReplay.objects.filter(reason="once more").exists()
    job = Job.objects.filter(occurrence=occurrence).order_by("-id").first()
    job_page = client.get(reverse("admin:litejobs_job_change", args=[job.pk])).content.decode()
    assert f"occurrence {occurrence.pk}" in job_page


def test_a_view_only_operator_sees_schedules_but_cannot_switch_them(hourly, clock, client):
    viewer = UserFactory(
        username="viewer", permissions=["litejobs.view_schedule", "litejobs.view_occurrence"]
    )
    client.force_login(viewer)
    row = Schedule.objects.get(name="t.hourly")
    page = client.get(reverse("admin:litejobs_schedule_change", args=[row.pk])).content.decode()
    assert "manage.py litejobs disable t.hourly" in page and 'id="schedule-disable"' not in page
    assert client.get(reverse("admin:litejobs_schedule_disable", args=[row.pk])).status_code == 403
    client.post(
        SCHEDULES,
        {
            "action": "disable_schedules",
            "_selected_action": [str(row.pk)],
            "apply": "1",
            "reason": "x",
        },
    )
    assert Schedule.objects.get(pk=row.pk).enabled


def test_the_schedule_page_shows_its_retry_policy_and_durations_in_words(
    hourly, clock, client, admin_user
):
    client.force_login(admin_user)
    row = Schedule.objects.get(name="t.hourly")
    row.retry = {"attempts": 5, "backoff": "exponential", "base": 2.0, "max": 600.0}
    row.retention = timedelta(days=90)
    row.timeout = timedelta(seconds=2)
    row.save()
    page = client.get(reverse("admin:litejobs_schedule_change", args=[row.pk])).content.decode()
    assert "5 attempts, exponential backoff from 2s to 10m" in page
    assert "&#x27;attempts&#x27;" not in page and '"attempts"' not in page
    for shown in (
        '<div class="readonly">2s</div>',
        '<div class="readonly">90d</div>',
        '<div class="readonly">5m</div>',
    ):
        assert shown in page
    assert "0:00:02" not in page and "90 days" not in page
    assert "Finished occurrences older than this are purged." in page  # help texts kept


def test_the_schedule_page_shows_the_leader_lease_to_the_second_like_its_other_times(
    hourly, clock, client, admin_user
):
    client.force_login(admin_user)
    until = datetime(2026, 3, 1, 13, 0, 30, 123456, tzinfo=UTC)
    LeaderLease.objects.filter(name=LeaderRole.SCHEDULER).update(expires_at=until)
    row = Schedule.objects.get(name="t.hourly")
    page = client.get(reverse("admin:litejobs_schedule_change", args=[row.pk])).content.decode()
    assert "lease until 13:00:30 UTC" in page  # as every litejobs page writes times
    assert "123456" not in page and "13:00:30+00:00" not in page
