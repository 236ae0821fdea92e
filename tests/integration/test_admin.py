"""The operator's admin: bounded listings, redacted details, actions through operations."""

import re
from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from litejobs.core import times
from litejobs.models import Job, JobAttempt, JobState, QueueState
from tests.factories import JobFactory, UserFactory, WorkerFactory
from tests.testapp.jobs import charge_card, flaky, record

pytestmark = pytest.mark.django_db

JOBS = reverse("admin:litejobs_job_changelist")
QUEUES = reverse("admin:litejobs_queuestate_changelist")
WORKERS = reverse("admin:litejobs_worker_changelist")


def texts(response) -> list[str]:
    return [
        f"[{m.extra_tags}] {m}" if m.extra_tags else str(m)
        for m in get_messages(response.wsgi_request)
    ]


def act(client, action, *ids):
    return client.post(
        JOBS, {"action": action, "_selected_action": [str(i) for i in ids]}, follow=True
    )


# The job listing ---------------------------------------------------------------------------


@pytest.mark.parametrize("rows", [3, 120])
def test_the_job_listing_costs_the_same_few_queries_whatever_the_rows(
    admin_client, clock, rows, django_assert_max_num_queries
):
    record.enqueue_many([{"label": "bulk", "value": i} for i in range(rows)])
    with django_assert_max_num_queries(10):  # 6, and up to 4 for why the jobs wait
        response = admin_client.get(JOBS)
    assert response.status_code == 200
    shown = response.context["cl"].result_list
    assert len(shown) == min(rows, 50)
    assert [job.id for job in shown] == sorted((job.id for job in shown), reverse=True)


def test_the_listing_shows_due_jobs_as_due_and_filters_by_state_queue_and_name(admin_client, clock):
    due = JobFactory(state=JobState.SCHEDULED, label="due", run_at=clock.now())
    later = JobFactory(state=JobState.SCHEDULED, label="later")
    response = admin_client.get(JOBS)
    content = response.content.decode()
    assert "ready (due)" in content
    response = admin_client.get(JOBS, {"state__exact": "scheduled", "queue": "default"})
    assert {j.id for j in response.context["cl"].result_list} == {due.id, later.id}
    response = admin_client.get(JOBS, {"name": "testapp.charge_card"})
    assert list(response.context["cl"].result_list) == []
    response = admin_client.get(JOBS, {"q": str(due.id)})
    assert [j.id for j in response.context["cl"].result_list] == [due.id]
    response = admin_client.get(JOBS, {"q": "record:later:0"})
    assert [j.id for j in response.context["cl"].result_list] == [later.id]


def test_the_count_is_capped_on_huge_listings(admin_client, clock, monkeypatch):
    from litejobs.admin.jobs import CappedCountPaginator

    monkeypatch.setattr(CappedCountPaginator, "CAP", 60)
    record.enqueue_many([{"label": "bulk", "value": i} for i in range(75)])
    response = admin_client.get(JOBS, {"queue": "default"})
    assert response.context["cl"].result_count == 60
    assert "60+ jobs" in " ".join(response.content.decode().split())


def test_jobs_cannot_be_added_edited_or_deleted(admin_client, clock):
    job = JobFactory()
    assert admin_client.get(reverse("admin:litejobs_job_add")).status_code == 403
    change = reverse("admin:litejobs_job_change", args=[job.id])
    assert admin_client.post(change, {"state": "done"}).status_code == 403
    assert admin_client.get(reverse("admin:litejobs_job_delete", args=[job.id])).status_code == 403
    assert Job.objects.get(pk=job.id).state == JobState.READY


# The detail page ---------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_detail_page_redacts_sensitive_values(admin_user, client, clock, run_worker):
    client.force_login(admin_user)
    enqueued = charge_card.enqueue(card_number="4111111111111111")
    run_worker()
    response = client.get(reverse("admin:litejobs_job_change", args=[enqueued.id]))
    content = response.content.decode()
    assert response.status_code == 200
    assert "4111111111111111" not in content
    assert "[redacted]" in content
    assert "builtins.ValueError" in content  # the error class
    assert "failed_attempts-group" in content and "Failed attempts" in content  # history
    assert JobAttempt.objects.filter(job_id=enqueued.id).count() == 1


def test_the_detail_page_blanks_sensitive_values_out_of_the_result_and_progress(
    admin_client, clock
):
    card = "4111111111111111"
    job = JobFactory(
        name=charge_card.name,
        payload={"card_number": card},
        state=JobState.DONE,
        result={"receipt": f"charged {card}"},
        progress={"done": 1, "total": 1, "note": f"charging {card}"},
    )
    content = admin_client.get(reverse("admin:litejobs_job_change", args=[job.id])).content
    assert card not in content.decode()
    assert "charged [redacted]" in content.decode() and "charging [redacted]" in content.decode()


def shown_fields(response, fieldset: str) -> dict[str, str]:
    """The read-only values a job page shows in one fieldset, by field name."""
    for shown in response.context["adminform"]:
        if shown.name == fieldset:
            return {field.field["name"]: str(field.contents()) for line in shown for field in line}
    raise AssertionError(f"no fieldset {fieldset!r}")


@pytest.mark.django_db(transaction=True)
def test_a_job_done_on_a_later_attempt_shows_no_current_error(admin_client, clock, run_worker):
    enqueued = flaky.enqueue(label="late", failures=1)
    run_worker()
    clock.advance("1h")
    run_worker()
    assert Job.objects.get(pk=enqueued.id).state == JobState.DONE
    response = admin_client.get(reverse("admin:litejobs_job_change", args=[enqueued.id]))
    error = shown_fields(response, "Error")
    assert error["error_class_shown"] == error["error_message_shown"] == "-"
    assert error["traceback_shown"] == "-"
    attempts = response.context["inline_admin_formsets"][1].formset.queryset
    assert [a.error_message for a in attempts] == ["flaky failure 1"]
    assert "flaky failure 1" in response.content.decode()  # under its attempt


@pytest.mark.django_db(transaction=True)
def test_each_failed_attempt_shows_its_own_number_across_a_retry(admin_client, clock, run_worker):
    enqueued = flaky.enqueue(label="twice", failures=10)
    run_worker()
    act(admin_client, "retry_jobs", enqueued.id)
    run_worker()
    content = admin_client.get(reverse("admin:litejobs_job_change", args=[enqueued.id])).content
    for number in (1, 2):
        assert f"attempt {number} of job {enqueued.id}".encode() in content


def test_a_failed_job_shows_its_current_error(admin_client, clock):
    job = JobFactory(
        state=JobState.DEAD,
        error_class="builtins.ValueError",
        error_message="no such card",
        error_traceback="Traceback: no such card",
    )
    response = admin_client.get(reverse("admin:litejobs_job_change", args=[job.id]))
    error = shown_fields(response, "Error")
    assert error["error_class_shown"] == "builtins.ValueError"
    assert error["error_message_shown"] == "no such card"
    assert "Traceback: no such card" in error["traceback_shown"]


def test_a_job_no_code_declares_shows_every_payload_value_redacted(admin_client, clock):
    job = JobFactory(
        name="gone.renamed", key="k", payload={"api_token": "hunter2-secret", "amount": 1234567}
    )
    content = admin_client.get(reverse("admin:litejobs_job_change", args=[job.id])).content
    assert b"hunter2-secret" not in content
    assert b"1234567" not in content
    assert b"api_token" in content


def test_the_detail_page_shows_lease_progress_and_error(admin_client, clock):
    job = JobFactory(
        state=JobState.RUNNING,
        lease_owner="worker-abc",
        fence=42,
        progress={"done": 5, "total": 10, "note": "halfway"},
    )
    content = admin_client.get(reverse("admin:litejobs_job_change", args=[job.id])).content
    for expected in (b"worker-abc", b"42", b"halfway"):
        assert expected in content
    # Instants to the second, as the listing writes them; a flag in words, not an icon.
    shown = clock.now() + timedelta(seconds=7)
    job.lease_expires_at = shown
    job.save(update_fields=["lease_expires_at"])
    page = admin_client.get(reverse("admin:litejobs_job_change", args=[job.id])).content.decode()
    assert f'title="{times.full(shown)}">{times.when(shown)}</time>' in page
    assert re.search(r"Cancel requested:</label>\s*<div class=\"readonly\">no</div>", page)


def test_the_detail_page_says_a_job_has_no_steps_or_failed_attempts_in_words(admin_client, clock):
    job = JobFactory(state=JobState.READY)
    page = admin_client.get(reverse("admin:litejobs_job_change", args=[job.id])).content.decode()
    assert "No steps." in page and "No failed attempts." in page
    assert "column-number" not in page  # no table headers over no rows
    JobAttempt.objects.create(
        job=job, number=1, outcome="failed", error_class="E", finished_at=job.created_at
    )
    page = admin_client.get(reverse("admin:litejobs_job_change", args=[job.id])).content.decode()
    assert "No failed attempts." not in page and "column-number" in page


# Actions -----------------------------------------------------------------------------------


def test_a_refusal_reads_as_a_sentence_with_its_code_in_the_tags(admin_client):
    """People read why in words; the stable code is the message's CSS class (for scripts,
    tests and operators' tools), never a "[code]" at the start of the sentence."""
    ready = JobFactory(state=JobState.READY, label="ready")
    response = act(admin_client, "retry_jobs", ready.id)
    [told] = get_messages(response.wsgi_request)
    assert told.extra_tags == "retry-refused" and "retry-refused" in told.tags
    assert str(told).startswith(f"Job {ready.id} ") and "[" not in str(told)
    assert 'class="retry-refused error"' in response.content.decode()


def test_retry_action_retries_and_reports_refusals(admin_client, clock):
    dead = JobFactory(state=JobState.DEAD, label="dead")
    ready = JobFactory(state=JobState.READY, label="ready")
    response = act(admin_client, "retry_jobs", dead.id, ready.id)
    messages = texts(response)
    assert f"Job {dead.id} is ready to run again." in messages
    assert any(
        m.startswith("[retry-refused]") and f"Job {ready.id} is ready" in m for m in messages
    )
    assert Job.objects.get(pk=dead.id).state == JobState.READY


def test_cancel_and_run_now_actions(admin_client, clock):
    ready = JobFactory(state=JobState.READY, label="ready")
    running = JobFactory(state=JobState.RUNNING, label="running", lease_owner="w1")
    scheduled = JobFactory(state=JobState.SCHEDULED, label="scheduled")
    messages = texts(act(admin_client, "cancel_jobs", ready.id, running.id))
    assert Job.objects.get(pk=ready.id).state == JobState.CANCELLED
    assert Job.objects.get(pk=running.id).cancel_requested
    assert any("cancellation requested" in m for m in messages)
    messages = texts(act(admin_client, "promote_jobs", scheduled.id, ready.id))
    assert Job.objects.get(pk=scheduled.id).run_at == clock.now()
    assert any(m.startswith("[promote-refused]") for m in messages)


def test_actions_need_the_change_permission(client, clock):
    viewer = UserFactory(username="viewer", permissions=["litejobs.view_job"])
    client.force_login(viewer)
    job = JobFactory(state=JobState.DEAD)
    response = client.get(JOBS)
    assert response.status_code == 200
    assert "retry_jobs" not in response.content.decode()
    act(client, "retry_jobs", job.id)
    assert Job.objects.get(pk=job.id).state == JobState.DEAD


def test_a_selection_over_the_limit_is_refused_whole(admin_client, clock, monkeypatch):
    monkeypatch.setattr("litejobs.admin.jobactions.ACTION_LIMIT", 2)
    jobs = [JobFactory(state=JobState.DEAD, label=str(i)) for i in range(3)]
    messages = texts(act(admin_client, "retry_jobs", *(j.id for j in jobs)))
    assert any(m.startswith("[selection-too-large]") for m in messages)
    assert set(Job.objects.values_list("state", flat=True)) == {JobState.DEAD}


# Workers -----------------------------------------------------------------------------------


def test_only_live_workers_are_listed(admin_client, clock):
    now = clock.now()
    for worker_id, expires in (("alive", now + timedelta(seconds=30)), ("gone", now)):
        WorkerFactory(
            id=worker_id,
            pid=7,
            queues=["emails"],
            concurrency=4,
            lease_expires_at=expires,
            in_flight=[1, 2, 3],
        )
    response = admin_client.get(WORKERS)
    assert [w.id for w in response.context["cl"].result_list] == ["alive"]
    content = response.content.decode()
    assert "host-alive" in content and "host-gone" not in content
    assert '<td class="field-in_flight_count">3</td>' in content


def test_a_worker_shows_stopping_in_words_not_as_an_alarming_icon(admin_client, clock):
    WorkerFactory(id="alive", lease_expires_at=clock.now() + timedelta(seconds=30))
    WorkerFactory(id="leaving", lease_expires_at=clock.now() + timedelta(seconds=30), stopping=True)
    listing = admin_client.get(WORKERS).content.decode()
    assert '<td class="field-stopping_label">no</td>' in listing
    assert '<td class="field-stopping_label">yes</td>' in listing
    page = admin_client.get(reverse("admin:litejobs_worker_change", args=["alive"]))
    content = page.content.decode()
    assert '<div class="readonly">no</div>' in content
    assert "icon-no.svg" not in listing + content and "icon-yes.svg" not in listing + content


# Queues ------------------------------------------------------------------------------------


def test_the_queue_overview_counts_jobs_per_state(
    admin_client, clock, django_assert_max_num_queries
):
    now = clock.now()
    JobFactory(state=JobState.READY, label="a", run_at=now - timedelta(minutes=3))
    JobFactory(state=JobState.READY, label="b")
    JobFactory(state=JobState.FAILED, label="c")
    JobFactory(state=JobState.DEAD, label="d")
    with django_assert_max_num_queries(5):
        response = admin_client.get(QUEUES)
    rows = {row["summary"].name: row for row in response.context["rows"]}
    default = rows["default"]
    assert [count for count, _ in default["counts"]] == [2, 0, 0, 1, 1]
    assert default["oldest_due"] == "3m"
    assert "state__exact=dead&amp;queue=default" in response.content.decode()


def test_pause_and_resume_from_the_overview(admin_client, clock):
    JobFactory()
    response = admin_client.post(
        QUEUES, {"action": "pause", "queue": ["default"], "reason": "db upgrade"}, follow=True
    )
    state = QueueState.objects.get(name="default")
    assert (state.paused, state.reason, state.changed_by) == (True, "db upgrade", "admin")
    assert any("paused" in m for m in texts(response))
    assert "db upgrade" in response.content.decode()

    response = admin_client.post(QUEUES, {"action": "resume", "queue": ["default"]}, follow=True)
    state.refresh_from_db()
    assert not state.paused


def test_pause_without_a_reason_is_refused(admin_client, clock):
    JobFactory()
    response = admin_client.post(
        QUEUES, {"action": "pause", "queue": ["default"], "reason": ""}, follow=True
    )
    assert any(m.startswith("[reason-required]") for m in texts(response))
    assert not QueueState.objects.exists()


def test_a_viewer_cannot_pause(client, clock):
    viewer = UserFactory(username="viewer", permissions=["litejobs.view_queuestate"])
    client.force_login(viewer)
    assert client.get(QUEUES).status_code == 200
    response = client.post(QUEUES, {"action": "pause", "queue": ["default"], "reason": "x"})
    assert response.status_code == 403
    assert not QueueState.objects.exists()
