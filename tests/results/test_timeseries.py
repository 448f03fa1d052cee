from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from jobs import timeseries
from jobs.timeseries import (
    DIRECTIONS,
    SERIES,
    day_extremes,
    epoch_ms,
    histogram,
    log_edges,
    lttb,
    midnight,
    minmax,
    minmax_indices,
    run_numbers,
    series,
    snapshot_limits,
    utc_day,
)
from jobs.tools import detect


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


# ----------------------------------------------------------------------------------------- result rows

FIXTURES = Path(__file__).parent.parent / "fixtures"


@pytest.mark.parametrize("name", ["fio-3.33-randrw.json", "fio-2.15-randrw.json", "ndisk_4proc_random_direct.txt"])
def test_a_runs_numbers_are_those_of_its_parsed_summary_to_the_hundredth(name):
    text = (FIXTURES / name).read_text()
    summary = detect.parse_output(text, detect.detect_format(text)).summary
    snapshot = {"iops": 8000.0, "effective_iops": 5000.0, "burst_iops": 16000.0, "effective_burst_iops": 9000.0}
    numbers = run_numbers(summary, {"block_size_bytes": 1}, snapshot)

    assert numbers["total_iops"] == pytest.approx(summary["total"]["iops"], abs=0.005) and numbers["total_iops"] > 0
    assert numbers["bw_bytes_per_s"] == round(summary["total"]["bw_bytes_per_s"])
    for direction in DIRECTIONS:
        if summary[direction] is None:
            assert numbers[f"{direction}_iops"] is None and numbers[f"{direction}_p99_us"] is None
            continue
        assert numbers[f"{direction}_iops"] == pytest.approx(summary[direction]["iops"], abs=0.005)
        for percentile in ("p50", "p99", "p99_9"):
            measured = summary[direction]["clat_us"][percentile]
            kept = numbers[f"{direction}_{percentile}_us"]
            assert kept is None if measured is None else kept == pytest.approx(measured, abs=0.005)
    # The block size the tool reports wins over the one the run asked for.
    assert numbers["block_size_bytes"] == summary["block_size_bytes"] == 4096
    assert (numbers["limit_iops"], numbers["burst_iops"]) == (5000.0, 9000.0)
    assert set(numbers) == {*SERIES.values(), "bw_bytes_per_s", "block_size_bytes", "limit_iops", "burst_iops"}


def test_what_is_not_a_finite_number_is_none_and_a_missing_limit_is_none():
    summary = {"total": {"iops": "fast"}, "read": {"iops": math.inf, "clat_us": {"p50": True, "p99": math.nan}},
               "write": [], "block_size_bytes": "4k"}  # fmt: skip
    numbers = run_numbers(summary, {"block_size_bytes": 65536}, {"error": "the spec changed"})
    assert {name: value for name, value in numbers.items() if value is not None} == {"block_size_bytes": 65536}
    assert run_numbers(None, None, None)["limit_iops"] is None
    assert snapshot_limits({"iops": 4000}) == {"limit_iops": 4000.0, "burst_iops": None}


def _day(rows: list[tuple]) -> dict:
    return day_extremes([(run, ms, *values, limit) for run, ms, values, limit in rows])


def test_a_day_keeps_the_lowest_and_highest_run_of_every_series_in_time_order():
    rng = random.Random(5)
    for _ in range(200):
        count = rng.randint(1, 30)
        rows = []
        for i in range(count):
            values = [rng.choice([None, round(rng.uniform(1, 100), 1), 50.0]) for _ in SERIES]
            rows.append((1000 + i, 86_400_000 + 60_000 * i, values, rng.choice([None, 4000.0])))
        out = _day(rows)
        assert (out["runs"], out["first_run"], out["last_run"]) == (count, 1000, 1000 + count - 1)
        for column, name in enumerate(SERIES):
            present = [(values[column], i) for i, (_, _, values, _) in enumerate(rows) if values[column] is not None]
            if not present:
                assert out[f"{name}_early_run"] is None and out[f"{name}_late_run"] is None
                continue
            # The earliest of equal lows and of equal highs, as minmax keeps them.
            low = min(present, key=lambda p: (p[0], p[1]))[1]
            high = min(present, key=lambda p: (-p[0], p[1]))[1]
            early, late = sorted((low, high))
            assert out[f"{name}_early_run"] == 1000 + early and out[f"{name}_late_run"] == 1000 + late
            assert out[f"{name}_early"] == rows[early][2][column] and out[f"{name}_late_ms"] == rows[late][1]
        assert out["total_early_limit"] in (None, 4000.0)


def test_a_day_of_one_run_has_it_as_both_ends():
    out = _day([(7, 5, [1.0] * len(SERIES), 4000.0)])
    assert out["total_early_run"] == out["total_late_run"] == 7
    assert out["read_p99_early"] == out["read_p99_late"] == 1.0 and out["total_late_limit"] == 4000.0


def test_packed_day_points_unpack_to_the_same_values_of_the_same_types_in_day_points_order():
    rng = random.Random(9)
    days = []
    for _ in range(50):
        rows = [(2**40 + i, 1_777_679_999_999 + i, [rng.choice([None, rng.uniform(0, 1e6), 0.1 + 0.2]) for _ in SERIES],
                 rng.choice([None, 4000.0]), rng.choice([None, True, False]), rng.randint(0, 1000))
                for i in range(rng.randint(1, 5))]  # fmt: skip
        flat = [(run, ms, *values, limit, steady, warnings) for run, ms, values, limit, steady, warnings in rows]
        extremes = day_extremes(flat)
        days.append(extremes | timeseries.day_flags(flat, extremes))
    packed = [timeseries.pack_day_points(day) for day in days]
    # Spans of days, each as columns: a list a field of DAY_POINTS, with a value a day.
    spans = [(0, 30), (30, 50), (7, 8)]
    unpacked = timeseries.unpack_day_points(packed, spans)
    expected = [[[day[field] for day in days[start:stop]] for field in timeseries.DAY_POINTS] for start, stop in spans]
    assert unpacked == expected
    assert [[list(map(type, c)) for c in span] for span in unpacked] == [[list(map(type, c)) for c in span]
                                                                        for span in expected]  # fmt: skip
    assert timeseries.unpack_day_points([], []) == []
    with pytest.raises(ValueError, match="not the"):  # a cell cut short
        timeseries.unpack_day_points([packed[0][:-1], packed[1]], [(0, 2)])
    # Every series' early and late run: time, value, run, steady flag, warnings (and the total's limit).
    assert len(timeseries.DAY_POINTS) == 2 * 5 * len(SERIES) + 2


def test_the_points_of_packed_days_are_each_days_early_and_late_run_of_a_series_once_each_with_none_left_out():
    rng = random.Random(11)
    days = []
    for _ in range(40):
        rows = [(2**40 + i, 1_777_679_999_999 + i, [rng.choice([None, rng.uniform(0, 1e6), 0.1 + 0.2]) for _ in SERIES],
                 rng.choice([None, 4000.0]), rng.choice([None, True, False]), rng.randint(0, 1000))
                for i in range(rng.randint(1, 4))]  # fmt: skip
        flat = [(run, ms, *values, limit, steady, warnings) for run, ms, values, limit, steady, warnings in rows]
        extremes = day_extremes(flat)
        days.append(extremes | timeseries.day_flags(flat, extremes))
    packed = [timeseries.pack_day_points(day) for day in days]
    spans = [(0, 25), (25, 25), (25, 40)]

    drawn = timeseries.day_series_points(packed, spans)

    for (start, stop), points in zip(spans, drawn, strict=True):
        for name_of_series in SERIES:
            fields = timeseries.day_point_fields(name_of_series)
            expected = {name: [] for name in timeseries.CHART_FIELDS[: len(fields)]}
            for day in days[start:stop]:
                ends = [end for end in ("early", "late") if day[f"{name_of_series}_{end}_run"] is not None]
                if (
                    ends == ["early", "late"]
                    and day[f"{name_of_series}_early_run"] == day[f"{name_of_series}_late_run"]
                ):
                    ends = ["early"]
                for end in ends:
                    for name, suffix in zip(expected, fields, strict=True):
                        expected[name].append(day[f"{name_of_series}_{end}{suffix}"])
            assert points[name_of_series] == expected
            assert [list(map(type, v)) for v in points[name_of_series].values()] == [
                list(map(type, v)) for v in expected.values()
            ]
    assert timeseries.day_series_points([], []) == []


def test_a_runs_time_is_cut_to_its_millisecond_so_it_stays_in_the_utc_day_it_finished():
    moment = datetime(2026, 5, 1, 23, 59, 59, 999_900, tzinfo=UTC)
    assert epoch_ms(moment) == 1_777_679_999_999
    assert midnight(utc_day(epoch_ms(moment))) == datetime(2026, 5, 1, tzinfo=UTC)
    assert utc_day(epoch_ms(moment + timedelta(microseconds=100))) == utc_day(epoch_ms(moment)) + 1
    assert epoch_ms(datetime(1970, 1, 1, 1, tzinfo=timezone(timedelta(hours=1)))) == 0


@pytest.mark.parametrize(
    ("within", "expected"),
    [
        ({"24h": 5, "7d": 5, "30d": 5, "all": 5}, "24h"),  # today's runs of a new disk: not one column of 30 days
        ({"24h": 4, "7d": 5, "30d": 5, "all": 5}, "7d"),
        ({"24h": 0, "7d": 0, "30d": 3, "all": 5}, "all"),  # every run, even when the last month holds some
        ({"24h": 24, "7d": 168, "30d": 720, "all": 8760}, "7d"),  # hourly for a year: enough in a week
        ({"24h": 0, "7d": 0, "30d": 0, "all": 0}, "24h"),
    ],
)
def test_the_default_range_is_the_shortest_holding_every_run_or_enough_of_them(within, expected) -> None:
    assert timeseries.fitting_range(within) == expected
