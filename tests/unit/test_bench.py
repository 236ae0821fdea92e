"""``manage.py litejobs bench``: options refused before anything runs, and how the report
summarises its rounds."""

import io

import pytest
from django.core.management import CommandError, call_command

from litejobs.bench.report import Stats, percentile


@pytest.mark.parametrize(
    "args",
    [
        ["--only", "W6"],
        ["--jobs", "W3=0"],
        ["--jobs", "W6=10"],
        ["--processes", "0"],
        ["--idle-seconds", "-1"],
        ["--rounds", "x"],
    ],
)
def test_bad_options_are_refused_before_anything_runs(args):
    with pytest.raises(CommandError):
        call_command("litejobs", "bench", *args, stdout=io.StringIO(), stderr=io.StringIO())


def test_figures_summarise_rounds_and_percentiles_take_the_nearest_rank():
    assert Stats.of([3.0, 1.0, 2.0]) == Stats(2.0, 1.0, 3.0)
    values = [float(n) for n in range(1, 101)]
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.95) == 95.0
    assert percentile([7.0], 0.95) == 7.0
