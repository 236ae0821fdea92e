"""Retry policies: bounded, monotone, jitter within bounds, deterministic (hypothesis)."""

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from litejobs import Retry
from litejobs.core.durations import parse_duration
from litejobs.exceptions import DeclarationError, InvalidInput, Permanent

policies = st.builds(
    Retry,
    attempts=st.integers(1, 50),
    backoff=st.sampled_from(["exponential", "linear", "fixed"]),
    base=st.integers(1, 600).map(lambda s: timedelta(seconds=s)),
    max=st.just(timedelta(hours=6)),
    jitter=st.sampled_from(["equal", "full", "none"]),
)


@given(policies, st.integers(1, 200), st.integers(0, 10**9))
def test_delays_stay_within_the_policy_bounds(policy, failed, job_id):
    plain = policy.unjittered_delay(failed)
    delay = policy.delay(failed, seed=str(job_id))
    assert timedelta(0) <= delay <= plain <= policy.max
    if policy.jitter == "equal":
        assert delay >= plain / 2
    if policy.jitter == "none":
        assert delay == plain
    assert delay == policy.delay(failed, seed=str(job_id))  # deterministic per job and attempt


@given(policies, st.integers(1, 100))
def test_unjittered_delays_never_shrink(policy, failed):
    assert policy.unjittered_delay(failed) <= policy.unjittered_delay(failed + 1)


def test_the_three_curves():
    assert [
        Retry(backoff="exponential", base="1s", max="1h").unjittered_delay(n).seconds
        for n in (1, 2, 3, 4)
    ] == [1, 2, 4, 8]
    assert [Retry(backoff="linear", base="5s").unjittered_delay(n).seconds for n in (1, 2, 3)] == [
        5,
        10,
        15,
    ]
    assert Retry(backoff="fixed", base="7s").unjittered_delay(9).seconds == 7
    assert Retry(base="1s", max="10s").unjittered_delay(500) == timedelta(seconds=10)


def test_permanent_and_give_up_on():
    policy = Retry(give_up_on=(LookupError,))
    assert policy.gives_up_on(Permanent("no"))
    assert policy.gives_up_on(KeyError("k"))
    assert not policy.gives_up_on(ValueError("v"))


@pytest.mark.parametrize(
    "options",
    [
        {"attempts": 0},
        {"attempts": 1001},
        {"backoff": "cubic"},
        {"jitter": "some"},
        {"base": "10m", "max": "1m"},
        {"base": "-1s"},
        {"give_up_on": ("KeyError",)},
    ],
)
def test_invalid_policies_are_refused_at_declaration(options):
    with pytest.raises(DeclarationError) as caught:
        Retry(**options)
    assert caught.value.code == "retry-invalid"


@pytest.mark.parametrize(
    ("text", "seconds"), [("10ms", 0.01), ("30s", 30), ("10m", 600), ("2h", 7200), ("3d", 259200)]
)
def test_durations(text, seconds):
    assert parse_duration(text).total_seconds() == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["soon", "-1s", "5 minutes", True, None])
def test_bad_durations_are_refused(bad):
    with pytest.raises(InvalidInput) as caught:
        parse_duration(bad)
    assert caught.value.code == "duration-invalid"


@pytest.mark.parametrize(
    ("policy", "words"),
    [
        (Retry(attempts=5), "5 attempts, exponential backoff from 2s to 10m (equal jitter)"),
        (Retry(attempts=1), "1 attempt, never retried"),
        (Retry(backoff="fixed", base="30s", jitter="none"), "3 attempts, 30s apart"),
        (
            Retry.coerce({"attempts": 4, "backoff": "linear", "base": 10.0, "max": 3600.0}),
            "4 attempts, linear backoff from 10s to 1h (equal jitter)",
        ),
    ],
)
def test_a_policy_is_described_in_words(policy, words):
    assert policy.describe() == words
