from datetime import UTC, datetime, timedelta

from litejobs.worker.handbacks import HandedBack

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_handed_back_job_is_avoided_until_its_instant():
    handed = HandedBack()
    handed.add(1, T0 + timedelta(seconds=10))
    handed.add(2, T0 + timedelta(seconds=20))
    assert handed.ids(T0) == [1, 2]
    assert handed.ids(T0 + timedelta(seconds=10)) == [2]
    assert handed.ids(T0 + timedelta(seconds=20)) == []


def test_the_oldest_are_forgotten_past_the_limit():
    handed = HandedBack(limit=2)
    for job_id in (1, 2, 3):
        handed.add(job_id, T0 + timedelta(hours=1))
    handed.add(2, T0 + timedelta(hours=2))  # handed back again: now the newest
    handed.add(4, T0 + timedelta(hours=1))
    assert handed.ids(T0) == [2, 4]
