"""What the benchmarks share (``bench/lib``): the nearest-rank percentile, and lines that carry
the machine's load."""

import math

import pytest

from lib import observing, output, statistics


@pytest.mark.parametrize(
    ("ordered", "quantile", "expected"),
    [
        ([1.0, 2.0, 3.0, 4.0], 0.5, 2.0),
        ([1.0, 2.0, 3.0, 4.0], 0.99, 4.0),
        ([1.0, 2.0, 3.0, 4.0], 0.0, 1.0),
        ([float(n) for n in range(1, 101)], 0.99, 99.0),
        ([7.0], 0.5, 7.0),
    ],
)
def test_the_percentile_is_the_nearest_rank(
    ordered: list[float], quantile: float, expected: float
) -> None:
    assert statistics.percentile(ordered, quantile) == expected


def test_the_percentile_of_nothing_is_not_a_number() -> None:
    assert math.isnan(statistics.percentile([], 0.5))


def test_a_progress_line_goes_to_stderr_with_the_load(capsys: pytest.CaptureFixture[str]) -> None:
    output.say("armed")

    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.rstrip().endswith("] armed")
    assert " load " in captured.err
    assert output.load().startswith("load average ")


@pytest.mark.parametrize(
    ("quantile", "expected"),
    [(0.5, 0.05), (0.9, 0.09), (1.0, 0.1)],
)
def test_a_histograms_quantile_is_read_as_promql_reads_it(quantile: float, expected: float) -> None:
    samples = observing.parse_metrics(
        "# TYPE lateness histogram\n"
        'lateness_bucket{le="0.1"} 10\n'
        'lateness_bucket{le="+Inf"} 10\n'
        "lateness_count 10\n"
        "lateness_sum 0.5\n"
    )

    assert observing.histogram_quantile(
        quantile, observing.buckets(samples, "lateness")
    ) == pytest.approx(expected)
    assert observing.total(samples, "lateness_count") == 10
