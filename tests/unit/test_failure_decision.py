"""The failure decision is a pure function: the same inputs always give the same value."""

from datetime import UTC, datetime, timedelta

from litejobs import Cancelled, Permanent, Retry, RetryAfter
from litejobs.core.enums import AttemptOutcome, CancelReason, JobState
from litejobs.worker.outcome import TIMEOUT_ERROR, decide_failure

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
POLICY = Retry(attempts=3, backoff="fixed", base="10s", max="10s", jitter="none")


def decide(error, *, attempt=1, retry=POLICY, **options):
    return decide_failure(
        error, attempt=attempt, max_attempts=3, job_id=7, now=NOW, retry=retry, **options
    )


def test_a_failed_attempt_with_attempts_left_is_retried_after_the_backoff():
    failure = decide(RuntimeError("boom"))
    assert (failure.state, failure.outcome, failure.run_at) == (
        JobState.FAILED,
        AttemptOutcome.FAILED,
        NOW + timedelta(seconds=10),
    )
    assert (failure.error_class, failure.discard, failure.at) == (
        "builtins.RuntimeError",
        False,
        NOW,
    )
    assert decide(RuntimeError("boom")) == failure  # the same inputs, the same decision


def test_the_jittered_backoff_is_derived_from_the_job_and_the_attempt():
    jittered = Retry(attempts=3, backoff="exponential", base="10s", max="1h")
    failure = decide(RuntimeError("boom"), attempt=2, retry=jittered)
    assert failure.run_at == NOW + jittered.delay(2, seed="7")
    assert timedelta(seconds=10) <= failure.run_at - NOW <= timedelta(seconds=20)


def test_retry_after_sets_the_next_attempt():
    failure = decide(RetryAfter("90s"))
    assert (failure.state, failure.run_at) == (JobState.FAILED, NOW + timedelta(seconds=90))


def test_spent_attempts_a_permanent_error_or_no_policy_end_the_job():
    for failure in (
        decide(RuntimeError("boom"), attempt=3),
        decide(Permanent("gone")),
        decide(LookupError("gone"), retry=Retry(attempts=3, give_up_on=(LookupError,))),
        decide(RuntimeError("cannot run here"), retry=None),
        decide(RetryAfter("90s"), attempt=3),
    ):
        assert (failure.state, failure.run_at) == (JobState.DEAD, None)


def test_a_spent_job_without_dead_letters_is_discarded():
    assert decide(RuntimeError("boom"), attempt=3, dead_letter=False).discard
    assert not decide(RuntimeError("boom"), dead_letter=False).discard  # a retry is due


def test_an_operator_cancel_is_cancelled_and_a_timeout_recorded_as_such():
    cancelled = decide(Cancelled("cancel"), cancel_reason=CancelReason.CANCEL)
    assert (cancelled.state, cancelled.outcome, cancelled.run_at) == (
        JobState.CANCELLED,
        AttemptOutcome.CANCELLED,
        None,
    )
    timed_out = decide(Cancelled("timeout"), cancel_reason=CancelReason.TIMEOUT)
    assert (timed_out.state, timed_out.outcome, timed_out.error_class) == (
        JobState.FAILED,
        AttemptOutcome.TIMEOUT,
        TIMEOUT_ERROR,
    )
