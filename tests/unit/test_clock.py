"""The clock in force: a ``use_clock`` override, else the one ``LITEJOBS["CLOCK"]`` names, else
the machine's."""

from datetime import UTC, datetime

from django.test import override_settings

from litejobs.clock import FrozenClock, SystemClock, now, use_clock
from litejobs.core.clock import get_clock, lease_instant

START = datetime(2000, 1, 1, tzinfo=UTC)


class StartOfTime:
    """A clock a project names in its settings."""

    def now(self) -> datetime:
        return START


def test_the_clock_the_settings_name_tells_the_time():
    with override_settings(LITEJOBS={"CLOCK": f"{__name__}.StartOfTime"}):
        assert isinstance(get_clock(), StartOfTime)
        assert now() == START and lease_instant() == START
    assert isinstance(get_clock(), SystemClock)  # forgotten when the setting changes back


def test_without_a_clock_setting_the_machine_tells_the_time_and_the_database_leases():
    with override_settings(LITEJOBS={"LEASE": "30s"}):
        assert isinstance(get_clock(), SystemClock)
        assert now().tzinfo is UTC and lease_instant() is None


def test_a_clock_in_use_goes_before_the_one_the_settings_name():
    frozen = FrozenClock(datetime(2026, 3, 1, tzinfo=UTC))
    with override_settings(LITEJOBS={"CLOCK": f"{__name__}.StartOfTime"}), use_clock(frozen):
        assert get_clock() is frozen and now() == frozen.now()
