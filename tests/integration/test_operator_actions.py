"""The operator's actions: delete, bulk over a filter, the operator action log (admin and CLI),
the CLI's workers / queues verbs and exit codes, and the read-only group."""

import json
import re
from io import StringIO

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.db import DatabaseError, transaction
from django.test import RequestFactory
from django.urls import NoReverseMatch, reverse

from litejobs.core.enums import OperatorVerb
from litejobs.exceptions import InvalidInput, TransitionRefused
from litejobs.jobs import actionlog, filtered, operations, queues
from litejobs.jobs.filtered import JobFilter
from litejobs.models import Job, JobAttempt, JobState, OperatorAction, QueueState
from tests.factories import JobAttemptFactory, JobFactory, UserFactory, WorkerFactory

pytestmark = pytest.mark.django_db

JOBS = reverse("admin:litejobs_job_changelist")
BULK = reverse("admin:litejobs_job_bulk")
QUEUES = reverse("admin:litejobs_queuestate_changelist")


def litejobs(*args):
    out, err = StringIO(), StringIO()
    call_command("litejobs", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def failing(code, *args):
    out, err = StringIO(), StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("litejobs", *args, stdout=out, stderr=err)
    assert exited.value.code == code
    return out.getvalue(), err.getvalue()


def dead_jobs(count, **fields):
    return [JobFactory(state=JobState.DEAD, label=f"d{i}", **fields) for i in range(count)]


# delete ------------------------------------------------------------------------------------


def test_delete_removes_a_job_that_is_not_running_with_its_history(clock):
    dead = JobFactory(state=JobState.DEAD)
    JobAttemptFactory(job=dead)
    outcome = operations.delete(dead.id, by="ops", reason="junk")
    assert outcome.action == "deleted"
    assert not Job.objects.filter(pk=dead.id).exists()
    assert not JobAttempt.objects.filter(job_id=dead.id).exists()
    row = OperatorAction.objects.get()
    assert (row.verb, row.by, row.job_ids, row.affected, row.reason) == (
        OperatorVerb.DELETE,
        "ops",
        [dead.id],
        1,
        "junk",
    )
    assert row.at == clock.now()


def test_delete_refuses_a_running_job_and_logs_nothing(clock):
    running = JobFactory(state=JobState.RUNNING)
    with pytest.raises(TransitionRefused) as refused:
        operations.delete(running.id, by="ops")
    assert refused.value.code == "delete-refused"
    assert Job.objects.filter(pk=running.id).exists()
    assert not OperatorAction.objects.exists()


# bulk over a filter ------------------------------------------------------------------------


def test_bulk_retry_changes_at_most_the_limit_and_says_what_remains(clock):
    jobs = dead_jobs(5)
    other = JobFactory(state=JobState.DEAD, queue="other", label="o")
    JobFactory(state=JobState.DONE, label="done")  # another state: not matched
    found = JobFilter(states=("dead",), queue="default")
    answer = filtered.bulk(OperatorVerb.RETRY, found, limit=2, by="ops", reason="fixed")
    assert answer == {"affected": 2, "remaining": 3}
    ready = set(Job.objects.filter(state=JobState.READY).values_list("pk", flat=True))
    assert ready == {jobs[0].id, jobs[1].id}
    assert Job.objects.get(pk=other.id).state == JobState.DEAD
    row = OperatorAction.objects.get()
    assert row.filter == {"state": ["dead"], "queue": "default", "limit": 2}
    assert (row.verb, row.affected, row.reason) == ("retry", 2, "fixed")
    assert row.job_ids == [jobs[0].id, jobs[1].id]  # the jobs it changed, by id
    answer = filtered.bulk(OperatorVerb.RETRY, found, limit=10, by="ops")
    assert answer == {"affected": 3, "remaining": 0}


def test_bulk_follows_the_single_verbs_state_rules(clock):
    running = JobFactory(state=JobState.RUNNING, label="run")
    dead = JobFactory(state=JobState.DEAD, label="dead")
    ready = JobFactory(state=JobState.READY, label="ready")
    answer = filtered.bulk(OperatorVerb.DELETE, JobFilter(queue="default"), by="ops")
    assert answer == {"affected": 2, "remaining": 0}
    assert list(Job.objects.values_list("pk", flat=True)) == [running.id]
    assert not Job.objects.filter(pk__in=[dead.id, ready.id]).exists()
    # A running job's cancel is requested once; it then no longer counts as remaining.
    answer = filtered.bulk(OperatorVerb.CANCEL, JobFilter(queue="default"), by="ops")
    assert answer == {"affected": 1, "remaining": 0}
    assert Job.objects.get(pk=running.id).cancel_requested


def test_bulk_promote_is_one_statement_over_the_matching_jobs(clock):
    later = [JobFactory(state=JobState.SCHEDULED, label=f"s{i}") for i in range(3)]
    answer = filtered.bulk(OperatorVerb.PROMOTE, JobFilter(states=("scheduled",)), by="ops")
    assert answer == {"affected": 3, "remaining": 0}
    assert all(
        job.run_at == clock.now() for job in Job.objects.filter(pk__in=[j.id for j in later])
    )


@pytest.mark.parametrize(
    ("found", "limit", "code"),
    [
        (JobFilter(), 10, "filter-missing"),
        (JobFilter(states=("dead",)), 0, "limit-invalid"),
        (JobFilter(states=("dead",)), filtered.BULK_MAX + 1, "limit-invalid"),
    ],
)
def test_bulk_refuses_no_filter_and_a_limit_out_of_bounds(clock, found, limit, code):
    dead_jobs(2)
    with pytest.raises(InvalidInput) as refused:
        filtered.bulk(OperatorVerb.DELETE, found, limit=limit, by="ops")
    assert refused.value.code == code
    assert Job.objects.count() == 2
    assert not OperatorAction.objects.exists()


# The operator action log -------------------------------------------------------------------


def test_single_verbs_and_queue_switches_write_the_log_in_their_transaction(clock):
    dead = JobFactory(state=JobState.DEAD, label="a")
    ready = JobFactory(state=JobState.READY, label="b")
    later = JobFactory(state=JobState.SCHEDULED, label="c")
    operations.retry(dead.id, by="ops", reason="r1")
    operations.cancel(ready.id, by="ops")
    operations.promote(later.id, by="ops")
    queues.pause("default", reason="incident", by="ops")
    queues.resume("default", by="ops", reason="over")
    assert queues.resume("default", by="ops") is None  # not paused: nothing, no row
    running = JobFactory(state=JobState.RUNNING, label="d")
    with pytest.raises(TransitionRefused):
        operations.retry(running.id, by="ops")  # refused: no row
    rows = list(OperatorAction.objects.order_by("id").values_list("verb", "job_ids", "filter"))
    assert rows == [
        ("retry", [dead.id], {}),
        ("cancel", [ready.id], {}),
        ("promote", [later.id], {}),
        ("pause", [], {"queue": "default"}),
        ("resume", [], {"queue": "default"}),
    ]
    assert OperatorAction.objects.get(verb="pause").reason == "incident"


def test_cli_actions_are_logged_with_the_cli_user_and_reason(clock, monkeypatch):
    monkeypatch.setattr("getpass.getuser", lambda: "ops-person")
    dead = JobFactory(state=JobState.DEAD)
    litejobs("retry", str(dead.id), "--reason", "deploy fixed it")
    litejobs("pause", "default", "--reason", "incident", "--by", "alice")
    rows = list(OperatorAction.objects.order_by("id").values_list("verb", "by", "reason", "user"))
    assert rows == [
        ("retry", "cli:ops-person", "deploy fixed it", None),
        ("pause", "alice", "incident", None),
    ]


def test_admin_actions_are_logged_with_the_admin_user(admin_client, admin_user, clock):
    dead = JobFactory(state=JobState.DEAD, label="a")
    other = JobFactory(state=JobState.DONE, label="b")
    admin_client.post(JOBS, {"action": "retry_jobs", "_selected_action": [str(dead.id)]})
    admin_client.post(JOBS, {"action": "delete_jobs", "_selected_action": [str(other.id)]})
    admin_client.post(QUEUES, {"action": "pause", "queue": ["default"], "reason": "incident"})
    rows = list(
        OperatorAction.objects.order_by("id").values_list("verb", "by", "user_id", "job_ids")
    )
    assert rows == [
        ("retry", "admin", admin_user.pk, [dead.id]),
        ("delete", "admin", admin_user.pk, [other.id]),
        ("pause", "admin", admin_user.pk, []),
    ]
    assert not Job.objects.filter(pk=other.id).exists()


def seen(client, query: str) -> str:
    """The bulk page's digest of the jobs it counted, as the operator's form holds it."""
    return client.get(BULK + query).context["form"]["seen"].value()


def test_the_admin_bulk_over_the_filter(admin_client, admin_user, clock):
    dead = dead_jobs(5)
    JobFactory(state=JobState.DEAD, queue="other", label="o")
    query = "?queue=default&state__exact=dead"
    page = admin_client.get(JOBS + query)
    assert f'href="{BULK}{query.replace("&", "&amp;")}"' in page.content.decode()
    form = admin_client.get(BULK + query)
    assert form.status_code == 200 and "matches <strong" in form.content.decode()
    assert form.context["matching"] == "5"
    looked = seen(admin_client, query)
    response = admin_client.post(
        BULK + query, {"verb": "cancel", "limit": "2", "reason": "x", "seen": looked}, follow=True
    )
    assert Job.objects.filter(state=JobState.DEAD).count() == 6  # cancel: not for dead jobs
    response = admin_client.post(
        BULK + query,
        {"verb": "delete", "limit": "2", "reason": "junk", "seen": looked},
        follow=True,
    )
    shown = " ".join(str(m) for m in response.context["messages"])
    assert "2 jobs changed; 3 matching jobs remain" in shown
    assert Job.objects.filter(state=JobState.DEAD, queue="default").count() == 3
    row = OperatorAction.objects.filter(verb="delete").get()
    assert (row.user_id, row.affected, row.reason) == (admin_user.pk, 2, "junk")
    assert row.filter == {"state": ["dead"], "queue": "default", "limit": 2}
    assert row.job_ids == [dead[0].id, dead[1].id]


def test_the_admin_bulk_counts_one_job_in_the_singular(admin_client, clock):
    dead_jobs(3)
    query = "?state__exact=dead"

    def delete(limit: str) -> str:
        response = admin_client.post(
            BULK + query,
            {"verb": "delete", "limit": limit, "reason": "junk", "seen": seen(admin_client, query)},
            follow=True,
        )
        return " ".join(str(m) for m in response.context["messages"])

    assert "2 jobs changed; 1 matching job remains (run it again" in delete("2")
    page = admin_client.get(BULK + query).content.decode()
    assert re.search(r"matches <strong[^>]*>1</strong> job\.", page)
    assert "1 job changed; no matching job remains." in delete("5")


def test_the_admin_bulk_refuses_no_filter_and_a_search(admin_client, clock):
    dead_jobs(2)
    for query in ("", "?q=x&state__exact=dead"):
        response = admin_client.post(
            BULK + query, {"verb": "delete", "limit": "2", "reason": "x"}, follow=True
        )
        assert Job.objects.count() == 2
        assert "refused" in response.content.decode() or "clear the search" in (
            response.content.decode()
        )
    assert not OperatorAction.objects.exists()


def messages_of(response) -> list[tuple[str, str]]:
    return [(m.tags, str(m)) for m in response.context["messages"]]


def test_the_admin_bulk_asks_again_when_the_matching_jobs_changed_since_its_count(
    admin_client, admin_user, clock
):
    dead = dead_jobs(3)
    query = "?state__exact=dead"
    looked = seen(admin_client, query)
    later = JobFactory(state=JobState.DEAD, label="died-since")  # dies while the form is open
    form = {"verb": "retry", "limit": "100", "reason": "fixed", "seen": looked}
    response = admin_client.post(BULK + query, form)
    # Nothing changed, nothing logged: the page shows the new count and asks again.
    assert response.status_code == 200 and response.context["matching"] == "4"
    assert any("filter-changed" in tags for tags, _ in messages_of(response))
    assert Job.objects.filter(state=JobState.DEAD).count() == 4
    assert not OperatorAction.objects.exists()
    asked = response.context["form"]
    assert asked["reason"].value() == "fixed" and asked["seen"].value() != looked
    # Confirmed on the new count: exactly the jobs it showed, named in the log.
    admin_client.post(BULK + query, {**form, "seen": asked["seen"].value()})
    assert not Job.objects.filter(state=JobState.DEAD).exists()
    row = OperatorAction.objects.get()
    assert row.job_ids == [job.id for job in (*dead, later)] and row.affected == 4


def test_the_admin_bulk_acts_on_nothing_when_a_counted_job_left_the_filter(admin_client, clock):
    dead = dead_jobs(2)
    query = "?state__exact=dead"
    looked = seen(admin_client, query)
    operations.retry(dead[0].id, by="someone else")  # retried by another operator meanwhile
    form = {"verb": "delete", "limit": "100", "reason": "junk", "seen": looked}
    response = admin_client.post(BULK + query, form)
    assert response.context["matching"] == "1"
    assert Job.objects.count() == 2
    assert OperatorAction.objects.get().verb == OperatorVerb.RETRY  # the other operator's only


def test_a_bulk_post_without_the_pages_count_is_asked_again(admin_client, clock):
    dead_jobs(2)
    response = admin_client.post(
        BULK + "?state__exact=dead", {"verb": "delete", "limit": "2", "reason": "x"}
    )
    assert response.status_code == 200 and response.context["matching"] == "2"
    assert Job.objects.count() == 2 and not OperatorAction.objects.exists()


def test_bulk_given_what_a_preview_saw_refuses_a_changed_set_and_writes_nothing(clock):
    dead_jobs(2)
    found = JobFilter(states=("dead",))
    looked = filtered.preview(found)
    assert (looked.count, looked.capped) == (2, False)
    JobFactory(state=JobState.DEAD, label="new")
    with pytest.raises(InvalidInput) as refused:
        filtered.bulk(OperatorVerb.RETRY, found, by="ops", seen=looked.seen)
    assert refused.value.code == "filter-changed" and "matches 3 now" in str(refused.value)
    assert Job.objects.filter(state=JobState.DEAD).count() == 3
    assert not OperatorAction.objects.exists()
    answer = filtered.bulk(OperatorVerb.RETRY, found, by="ops", seen=filtered.preview(found).seen)
    assert answer == {"affected": 3, "remaining": 0}


def test_the_admin_bulk_takes_the_jobs_a_problem_names(admin_client, clock):
    dead = dead_jobs(3)
    query = f"?ids={dead[0].id},{dead[2].id}"
    response = admin_client.post(
        BULK + query,
        {"verb": "retry", "limit": "10", "reason": "fixed", "seen": seen(admin_client, query)},
    )
    assert response.status_code == 302
    assert Job.objects.get(pk=dead[1].id).state == JobState.DEAD
    row = OperatorAction.objects.get()
    assert row.job_ids == [dead[0].id, dead[2].id]
    assert row.filter == {"ids": [dead[0].id, dead[2].id], "limit": 10}


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("?state__exact=bogus", "listing-filter-invalid"),
        ("?ids=1,x", "listing-filter-invalid"),
        ("?state__exact=dead&payload=card_number=4111111111111111", "listing-filter-invalid"),
        ("?queue=", "filter-missing"),
    ],
)
def test_the_admin_bulk_refuses_a_filter_it_cannot_act_on_with_its_code(
    admin_client, clock, query, code
):
    dead_jobs(1)
    response = admin_client.get(BULK + query, follow=True)
    assert any(code in tags for tags, _ in messages_of(response)), messages_of(response)
    assert "matching" not in response.context  # nothing counted
    assert not OperatorAction.objects.exists()


def test_the_log_admin_shows_a_bulk_rows_filter_and_the_jobs_it_changed(admin_client, clock):
    dead = dead_jobs(25)
    filtered.bulk(OperatorVerb.RETRY, JobFilter(states=("dead",)), by="ops", reason="fixed")
    row = OperatorAction.objects.get()
    listed = admin_client.get(reverse("admin:litejobs_operatoraction_changelist"))
    ids = ", ".join(str(job.id) for job in dead[:20])
    assert f"state dead; limit 100; jobs {ids} and 5 more" in listed.content.decode()
    page = admin_client.get(reverse("admin:litejobs_operatoraction_change", args=[row.pk]))
    assert str(dead[-1].id) in page.content.decode()


def test_the_log_admin_filters_by_who_in_words(admin_client, clock):
    operations.delete(JobFactory(state=JobState.DEAD).id, by="ops", reason="junk")
    page = admin_client.get(reverse("admin:litejobs_operatoraction_changelist")).content.decode()
    titles = [" ".join(t.split()) for t in re.findall(r"<summary>(.*?)</summary>", page, re.S)]
    assert "By who" in titles and "By by" not in titles, titles


def test_the_log_admin_is_read_only_for_everybody(admin_client, clock):
    operations.delete(JobFactory(state=JobState.DEAD).id, by="ops", reason="junk")
    row = OperatorAction.objects.get()
    url = reverse("admin:litejobs_operatoraction_changelist")
    response = admin_client.get(url, {"verb": "delete"})
    assert response.status_code == 200 and "junk" in response.content.decode()
    model_admin = admin.site._registry[OperatorAction]
    request = RequestFactory().get(url)
    request.user = response.wsgi_request.user
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request, row)
    assert not model_admin.has_delete_permission(request, row)
    assert not model_admin.get_actions(request)


def test_the_log_is_append_only_in_the_database_and_keeps_who_when_the_user_goes(clock):
    user = UserFactory()
    operations.delete(JobFactory(state=JobState.DEAD).id, by="ops", reason="junk", user_id=user.pk)
    row = OperatorAction.objects.get()
    with pytest.raises(DatabaseError, match="Cannot update"), transaction.atomic():
        OperatorAction.objects.filter(pk=row.pk).update(reason="nothing to see")
    with pytest.raises(DatabaseError, match="never deleted"), transaction.atomic():
        OperatorAction.objects.filter(pk=row.pk).delete()
    user.delete()
    kept = OperatorAction.objects.get()
    assert (kept.by, kept.reason, kept.user_id) == ("ops", "junk", None)


def test_a_setting_change_logs_each_old_and_new_value_and_the_admin_says_it(admin_client, clock):
    actor = actionlog.Actor("ops", reason="partner asked")
    actionlog.record(
        OperatorVerb.REPORT_LIMITS,
        actor,
        affected=1,
        filter={"report": "sales"},
        change={"max_concurrent": (2, 4)},
    )
    row = OperatorAction.objects.get()
    assert (row.filter, row.change) == ({"report": "sales"}, {"max_concurrent": [2, 4]})
    page = admin_client.get(reverse("admin:litejobs_operatoraction_changelist")).content.decode()
    assert "report sales" in page and "max_concurrent 2 → 4" in page


# The CLI -----------------------------------------------------------------------------------


def test_cli_bulk_forms_answer_affected_and_remaining(clock):
    dead_jobs(5)
    out, _ = litejobs("retry", "--state", "dead", "--limit", "2", "--reason", "r", "--json")
    assert json.loads(out) == {"affected": 2, "remaining": 3}
    out, _ = litejobs("delete", "--state", "dead", "--limit", "2")
    assert "2 jobs changed; 1 matching job remains" in out
    out, _ = litejobs("cancel", "--state", "ready", "--json")
    assert json.loads(out) == {"affected": 2, "remaining": 0}
    row = OperatorAction.objects.order_by("id").first()
    assert row.filter == {"state": ["dead"], "limit": 2} and row.reason == "r"


@pytest.mark.parametrize("verb", ["list", "retry"])
def test_the_cli_filters_no_payload_so_a_sensitive_value_cannot_be_matched_there(clock, verb):
    """The job list's payload filter is the admin's only: no verb of the CLI takes one."""
    with pytest.raises(CommandError, match=r"unrecognized arguments|a job id is"):
        litejobs(verb, "--state", "dead", "--payload", "card_number=4111111111111111")


@pytest.mark.parametrize("verb", ["retry", "cancel", "promote", "delete"])
def test_cli_bulk_without_a_filter_or_with_an_id_too_is_bad_usage(clock, verb):
    dead = dead_jobs(2)
    _, err = failing(2, verb, "--limit", "2")
    assert err.startswith("[usage-invalid]")
    out, _ = failing(2, verb, "--json")
    assert json.loads(out)["code"] == "usage-invalid"
    failing(2, verb, str(dead[0].id), "--state", "dead")
    assert Job.objects.count() == 2 and not OperatorAction.objects.exists()


def test_cli_delete_and_its_refusal(clock):
    dead = JobFactory(state=JobState.DEAD, label="a")
    running = JobFactory(state=JobState.RUNNING, label="b")
    out, _ = litejobs("delete", str(dead.id), "--json")
    assert json.loads(out)["action"] == "deleted"
    _, err = failing(1, "delete", str(running.id))
    assert err.startswith("[delete-refused]")
    out, _ = failing(1, "delete", str(running.id), "--json")
    assert json.loads(out)["code"] == "delete-refused"


def test_cli_workers_lists_live_and_recently_gone_workers(clock):
    from datetime import timedelta

    live = WorkerFactory(queues=["default"], concurrency=4, in_flight=[7, 8])
    gone = WorkerFactory(
        started_at=clock.now() - timedelta(minutes=30),
        lease_expires_at=clock.now() - timedelta(minutes=10),
    )
    WorkerFactory(
        started_at=clock.now() - timedelta(hours=3),
        lease_expires_at=clock.now() - timedelta(hours=2),
    )
    rows = json.loads(litejobs("workers", "--json")[0])
    assert [(row["id"], row["alive"]) for row in rows] == [(live.id, True), (gone.id, False)]
    assert rows[0]["queues"] == ["default"] and rows[0]["in_flight"] == [7, 8]
    assert rows[0]["concurrency"] == 4 and {"host", "pid", "last_heartbeat"} <= rows[0].keys()
    out, _ = litejobs("workers")
    assert out.splitlines()[0].split()[:3] == ["host", "pid", "status"]
    assert "gone" in out and "7,8" in out


def test_cli_queues_lists_counts_the_switch_and_the_oldest_due_age(clock):
    JobFactory(state=JobState.READY, label="a")
    JobFactory(state=JobState.DEAD, label="b")
    queues.pause("default", reason="incident", by="ops")
    clock.advance(90)
    rows = {row["name"]: row for row in json.loads(litejobs("queues", "--json")[0])}
    default = rows["default"]
    assert default["counts"]["ready"] == 1 and default["counts"]["dead"] == 1
    assert default["paused"] and default["reason"] == "incident"
    assert default["changed_by"] == "ops"
    assert default["oldest_due_age_seconds"] == 90
    out, _ = litejobs("queues")
    assert "paused by ops: incident" in out


def test_doctor_json_names_a_runbook_and_exits_3(clock):
    JobFactory(state=JobState.DEAD, finished_at=clock.now())
    out, _ = failing(3, "doctor", "--json")
    problems = {p["code"]: p for p in json.loads(out)["problems"]}
    assert problems["dead-jobs"]["runbook"] == "operating/runbooks/#dead-jobs"
    assert {"code", "message", "runbook", "job_ids", "schedules"} <= problems["dead-jobs"].keys()


def test_doctor_reports_unapplied_migrations_before_anything_else(clock, monkeypatch):
    from django.core import checks

    from litejobs import doctor

    unapplied = checks.Error(
        "[migrations-unapplied] litejobs' tables are not migrated in db: 1 migration(s).",
        hint="Run `python manage.py migrate` first.",
        id="litejobs.E043",
    )
    monkeypatch.setattr(doctor, "database_checks", lambda alias, waited: [unapplied])
    out, _ = failing(3, "doctor", "--json")
    problems = json.loads(out)["problems"]
    assert [p["code"] for p in problems] == ["migrations-unapplied"]
    assert "manage.py migrate" in problems[0]["message"]


# The read-only group -----------------------------------------------------------------------


@pytest.fixture
def reader(client):
    user = UserFactory(username="reader")
    user.groups.add(Group.objects.get(name="litejobs read-only"))
    client.force_login(user)
    return client


def litejobs_admins():
    return [
        (model, model_admin)
        for model, model_admin in admin.site._registry.items()
        if model._meta.app_label == "litejobs"
    ]


def test_the_read_only_group_holds_litejobs_view_permissions_only():
    group = Group.objects.get(name="litejobs read-only")
    codenames = set(group.permissions.values_list("codename", flat=True))
    models = {model._meta.model_name for model, _ in litejobs_admins()}
    assert {f"view_{name}" for name in models} <= codenames
    assert all(code.startswith("view_") for code in codenames)
    assert set(group.permissions.values_list("content_type__app_label", flat=True)) == {"litejobs"}


def test_a_reader_sees_every_litejobs_admin_page(reader, clock):
    job = JobFactory(state=JobState.DEAD)
    operations.retry(job.id, by="ops")
    row = OperatorAction.objects.get()
    assert reader.get(reverse("admin:app_list", args=["litejobs"])).status_code == 200
    for model, _ in litejobs_admins():
        url = reverse(f"admin:litejobs_{model._meta.model_name}_changelist")
        assert reader.get(url).status_code == 200, url
    for name, pk in (("job", job.pk), ("operatoraction", row.pk)):
        url = reverse(f"admin:litejobs_{name}_change", args=[pk])
        assert reader.get(url).status_code == 200, url


def test_a_reader_can_change_nothing(reader, clock):
    dead = JobFactory(state=JobState.DEAD, label="a")
    request = RequestFactory().get("/")
    request.user = reader.get(JOBS).wsgi_request.user
    for _, model_admin in litejobs_admins():
        assert not model_admin.get_actions(request), model_admin
    response = reader.post(JOBS, {"action": "retry_jobs", "_selected_action": [str(dead.id)]})
    assert response.status_code in (200, 302)
    response = reader.post(JOBS, {"action": "delete_jobs", "_selected_action": [str(dead.id)]})
    assert Job.objects.get(pk=dead.id).state == JobState.DEAD
    assert reader.get(BULK + "?state__exact=dead").status_code == 403
    posted = {"verb": "delete", "limit": "5", "reason": "x"}
    assert reader.post(BULK + "?state__exact=dead", posted).status_code == 403
    pause = {"action": "pause", "queue": ["default"], "reason": "x"}
    assert reader.post(QUEUES, pause).status_code == 403
    assert not QueueState.objects.exists()
    before = row_counts()
    for url in custom_post_views():
        response = reader.post(url, {"reason": "x", "confirm": "1", "report": "tests.sales"})
        assert response.status_code in (200, 302, 403, 404), (url, response.status_code)
    assert row_counts() == before
    assert Job.objects.filter(pk=dead.id, state=JobState.DEAD).exists()
    assert not OperatorAction.objects.exists()


def row_counts():
    """How many rows each litejobs model holds: a refused change leaves them as they were."""
    return {model: model._default_manager.count() for model, _ in litejobs_admins()}


def custom_post_views():
    """Every custom page of litejobs' admin (a report request, a schedule disable, a work
    queue, a bulk money preview ...), at an id where the page takes one."""
    urls = []
    for model, model_admin in litejobs_admins():
        default = {
            f"{model._meta.app_label}_{model._meta.model_name}_{s}"
            for s in ("add", "change", "changelist", "delete", "history", "autocomplete")
        }
        for pattern in model_admin.get_urls():
            if not pattern.name or pattern.name in default:
                continue
            for args in ([], ["1"], [1], ["default"]):
                try:
                    urls.append(reverse(f"admin:{pattern.name}", args=args))
                    break
                except NoReverseMatch:
                    continue
    assert len(urls) >= 8
    return urls


#: The verbs ``manage.py litejobs`` offers operators (the issue's list).
VERBS = [
    "list",
    "show",
    "retry",
    "cancel",
    "promote",
    "delete",
    "pause",
    "resume",
    "replay",
    "disable",
    "enable",
    "purge",
    "doctor",
    "bench",
    "workers",
    "queues",
]


def test_every_operator_verb_exists():
    from litejobs.management.commands.litejobs import Command

    parser = Command().create_parser("manage.py", "litejobs")
    subparsers = next(a for a in parser._actions if a.dest == "verb")
    assert set(VERBS) <= set(subparsers.choices)


def _verb_args(clock):
    """Each job and queue verb's arguments, on fresh rows (one job per changing verb)."""
    shown = JobFactory(state=JobState.DEAD, label="show")
    return [
        (("list",), 0),
        (("show", str(shown.id)), 0),
        (("retry", str(JobFactory(state=JobState.DEAD, label="r").id)), 0),
        (("cancel", str(JobFactory(state=JobState.READY, label="c").id)), 0),
        (("promote", str(JobFactory(state=JobState.SCHEDULED, label="p").id)), 0),
        (("delete", str(JobFactory(state=JobState.DONE, label="x").id)), 0),
        (("pause", "default", "--reason", "incident"), 0),
        (("resume", "default"), 0),
        (("workers",), 0),
        (("queues",), 0),
        (("purge",), 0),
        (("doctor",), 3),  # the dead job of ``show`` is a problem
    ]


@pytest.mark.parametrize("as_json", [True, False])
def test_each_verb_answers_text_or_json_on_stdout(clock, as_json):
    WorkerFactory()
    for args, code in _verb_args(clock):
        args = (*args, "--json") if as_json else args
        out, _err = litejobs(*args) if code == 0 else failing(code, *args)
        assert out.strip(), args
        if as_json:
            json.loads(out)  # the whole of stdout is one JSON value
        else:
            with pytest.raises(ValueError):
                json.loads(out)


@pytest.mark.parametrize("verb", ["delete", "retry", "bulk"])
def test_the_log_row_and_the_change_commit_together(clock, monkeypatch, verb):
    dead = JobFactory(state=JobState.DEAD)

    def failing_record(*args, **kwargs):
        raise RuntimeError("the log could not be written")

    monkeypatch.setattr(filtered if verb == "bulk" else operations, "record", failing_record)
    with pytest.raises(RuntimeError):
        if verb == "bulk":
            filtered.bulk(OperatorVerb.DELETE, JobFilter(states=("dead",)), by="ops")
        else:
            getattr(operations, verb)(dead.id, by="ops")
    assert Job.objects.get(pk=dead.id).state == JobState.DEAD


def test_delete_refuses_an_unfinished_job_a_bulk_money_item_follows(clock):
    from litejobs.bulk.execution import ITEM_JOB

    item_job = JobFactory(state=JobState.READY, name=ITEM_JOB, payload={"confirmation": 1})
    with pytest.raises(TransitionRefused) as refused:
        operations.delete(item_job.id, by="ops")
    assert refused.value.code == "delete-refused" and "cancel it first" in str(refused.value)
    plain = JobFactory(state=JobState.READY, label="plain")
    answer = filtered.bulk(OperatorVerb.DELETE, JobFilter(states=("ready",)), by="ops")
    assert answer == {"affected": 1, "remaining": 1}
    assert list(Job.objects.values_list("pk", flat=True)) == [item_job.id]
    assert not Job.objects.filter(pk=plain.id).exists()
    Job.objects.filter(pk=item_job.id).update(state=JobState.CANCELLED)
    operations.delete(item_job.id, by="ops")  # finished: its item was settled
    assert not Job.objects.exists()


#: The verbs that change something: each takes who acts and why.
CHANGING = [
    "retry",
    "cancel",
    "promote",
    "delete",
    "pause",
    "resume",
    "replay",
    "disable",
    "enable",
    "purge",
    "run-manual",
    "resolve-step",
]


def test_every_changing_verb_takes_by_and_reason():
    from litejobs.management.commands.litejobs import Command

    parser = Command().create_parser("manage.py", "litejobs")
    subparsers = next(a for a in parser._actions if a.dest == "verb")
    for verb in CHANGING:
        options = {o for a in subparsers.choices[verb]._actions for o in a.option_strings}
        assert {"--by", "--reason"} <= options, verb
