from __future__ import annotations

import math
import random

import pytest

from jobs import timeseries
from jobs.timeseries import histogram, log_edges, lttb, minmax, minmax_indices, series


def _noisy(count: int, seed: int = 7) -> list[tuple[float, float]]:
    rng = random.Random(seed)
    return [(float(i), 1000 + 200 * math.sin(i / 50) + rng.uniform(-50, 50)) for i in range(count)]


@pytest.mark.parametrize("downsample", [minmax, lttb])
@pytest.mark.parametrize("count", [0, 1, 2, 5, 1999, 2000])
def test_a_series_that_fits_comes_back_unchanged(downsample, count):
    points = _noisy(count)
    assert downsample(points, 2000) == points
    assert downsample(points, 2000) is not points


@pytest.mark.parametrize("downsample", [minmax, lttb])
@pytest.mark.parametrize(("count", "limit"), [(2001, 2000), (5000, 2000), (100_000, 2000), (10, 4), (1000, 7)])
def test_a_long_series_comes_back_as_at_most_limit_points_with_both_ends(downsample, count, limit):
    points = _noisy(count)
    kept = downsample(points, limit)
    assert len(kept) <= limit
    assert kept[0] == points[0] and kept[-1] == points[-1]


@pytest.mark.parametrize("downsample", [minmax, lttb])
def test_the_points_kept_are_real_points_in_their_order(downsample):
    points = _noisy(10_000)
    kept = downsample(points, 500)
    assert set(kept) <= set(points)
    assert [p[0] for p in kept] == sorted({p[0] for p in kept})


def test_minmax_keeps_the_lowest_and_highest_point_of_the_series_and_of_every_bucket():
    points = _noisy(50_000)
    points[12_345] = (12_345.0, -1.0)
    points[33_333] = (33_333.0, 1e9)
    kept = minmax(points, 2000)
    assert (12_345.0, -1.0) in kept and (33_333.0, 1e9) in kept
    assert min(p[1] for p in kept) == min(p[1] for p in points)
    assert max(p[1] for p in kept) == max(p[1] for p in points)
    # Every bucket of equal count between the ends keeps its own lowest and highest point.
    buckets, inner = (2000 - 2) // 2, len(points) - 2
    kept_set = set(kept)
    for bucket in range(buckets):
        chunk = points[1 + bucket * inner // buckets : 1 + (bucket + 1) * inner // buckets]
        assert min(chunk, key=lambda p: p[1]) in kept_set and max(chunk, key=lambda p: p[1]) in kept_set


def test_minmax_on_a_flat_series_keeps_one_point_per_bucket():
    indices = minmax_indices([5.0] * 10_000, 2000)
    assert len(indices) == 2 + 999 and indices == sorted(set(indices))


def test_lttb_keeps_an_isolated_spike_and_dip():
    points = [(float(i), 100.0) for i in range(20_000)]
    points[7_000] = (7_000.0, 5_000.0)
    points[15_000] = (15_000.0, 0.0)
    kept = lttb(points, 300)
    assert len(kept) == 300
    assert (7_000.0, 5_000.0) in kept and (15_000.0, 0.0) in kept


def test_extra_values_ride_along_with_their_point():
    points = [(float(i), float(i % 17), f"run {i}") for i in range(5000)]
    for kept in (minmax(points, 100), lttb(points, 100)):
        assert all(p[2] == f"run {int(p[0])}" for p in kept)


@pytest.mark.parametrize(("downsample", "limit"), [(minmax, 3), (lttb, 2)])
def test_a_limit_too_small_to_keep_both_ends_is_refused(downsample, limit):
    with pytest.raises(ValueError, match="at least"):
        downsample(_noisy(100), limit)


def test_series_skips_missing_and_non_numeric_values():
    rows = [(1, 10.0, "a"), (2, None, "b"), (3, "fast", "c"), (4, math.nan, "d"), (5, True, "e"), (6, 7, "f")]
    assert series(rows, 0, 1, 2) == [(1, 10.0, "a"), (6, 7, "f")]


def test_log_edges_are_log_spaced_from_low_to_high():
    edges = log_edges(1.0, 10_000.0, 40)
    assert len(edges) == 41 and edges[0] == 1.0 and edges[-1] == 10_000.0
    assert edges[10] == pytest.approx(10.0) and edges[20] == pytest.approx(100.0)
    assert log_edges(5.0, 5.0) == [5.0, 5.0]
    with pytest.raises(ValueError):
        log_edges(0.0, 10.0)


def test_histogram_puts_every_count_in_exactly_one_bin():
    edges = log_edges(1.0, 1000.0, 3)  # 1, 10, 100, 1000
    counts = {0.5: 1, 1.0: 2, 9.99: 3, 10.0: 4, 999.0: 5, 1000.0: 6, 5000.0: 7}
    assert histogram(counts, edges) == [1 + 2 + 3, 4, 5 + 6 + 7]
    assert histogram({}, edges) == [0, 0, 0]


def test_the_default_limit_is_the_2000_points_of_the_design():
    assert timeseries.MAX_POINTS == 2000
    assert len(minmax(_noisy(10_000))) <= 2000 and len(lttb(_noisy(10_000))) == 2000
