"""A synchronised group's numbers (jobs/sets/group_clocks.py, group_totals.py, group_latency.py) on synthetic
members whose answer is known: clock offsets behind asymmetric round trips, starts apart by known amounts,
per-second samples laid out on a millisecond grid (so the test can say exactly, in whole milliseconds, which second
falls in which window), latencies bucketed as fio buckets them, and group-size curves with a known saturation. Pure
functions: no database."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.sets.group_clocks import ClockOffset, Probe, StartSpread, clock_offset, start_spread
from jobs.sets.group_latency import (
    GROUP_PERCENTILES,
    MemberLatency,
    SizePoint,
    compare_members,
    group_latency,
    member_latency,
    saturation,
)
from jobs.sets.group_totals import Member, Window, per_second, totals, windows
from jobs.tools.summary import percentiles_from_bins

FAST = settings(max_examples=150, deadline=None, database=None)
# The common clock's instants are epoch seconds, as a worker's are.
EPOCH = 1_790_000_000


# ----------------------------------------------------------------------------- clock offsets


def probe(t0: float, offset: float, there: float, held: float, back: float) -> Probe:
    """A probe sent at t0 (common clock) to a host whose clock is `offset` ahead, with its two legs' delays."""
    t1 = t0 + there + offset
    t2 = t1 + held
    return Probe(t0, t1, t2, t2 - offset + back)


legs = st.floats(0.0, 0.5)
exchanges = st.lists(st.tuples(legs, st.floats(0.0, 0.01), legs), min_size=1, max_size=8)


@FAST
@given(st.floats(-3600, 3600), exchanges)
def test_an_offset_behind_asymmetric_delays_is_recovered_within_its_uncertainty(offset, trips):
    probes = [probe(EPOCH + i, offset, there, held, back) for i, (there, held, back) in enumerate(trips)]
    found = clock_offset(probes)
    assert abs(found.offset_s - offset) <= found.uncertainty_s + 1e-6
    # The uncertainty is the best probe's half round trip: the fastest exchange is the one used.
    assert found.uncertainty_s == pytest.approx(min(there + back for there, _, back in trips) / 2, abs=1e-6)


def test_symmetric_legs_give_the_offset_exactly():
    found = clock_offset([probe(100.0, 2.5, 0.004, 0.001, 0.004)])
    assert found.offset_s == pytest.approx(2.5, abs=1e-12)
    assert found.delay_s == pytest.approx(0.008, abs=1e-12)
    assert found.to_common(1002.5) == pytest.approx(1000.0)


def test_the_probe_with_the_smallest_round_trip_is_the_one_believed():
    lopsided = probe(10.0, 1.0, 0.300, 0.0, 0.010)  # alone it would say 1.145 s
    quick = probe(20.0, 1.0, 0.002, 0.0, 0.002)
    assert clock_offset([lopsided]).offset_s == pytest.approx(1.145)
    assert clock_offset([lopsided, quick]).offset_s == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("probes", "problem"),
    [
        ([], "no probe"),
        ([Probe(10.0, 5.0, 5.1, 9.0)], r"probe 1: its answer came back .* before it was sent"),
        ([Probe(0.0, 5.0, 5.1, 1.0), Probe(10.0, 5.0, 4.9, 11.0)], r"probe 2: the host answered .* before it received"),
        ([Probe(10.0, 5.0, 7.0, 11.0)], r"probe 1: the host held it 2 s, longer than the round trip \(1 s\)"),
        ([Probe(10.0, math.nan, 5.0, 11.0)], "probe 1: every time must be a finite number"),
    ],
)
def test_a_probe_no_clocks_could_give_is_refused_by_name(probes, problem):
    with pytest.raises(ValueError, match=problem):
        clock_offset(probes)


# ----------------------------------------------------------------------------- start spread


def test_the_start_spread_reads_as_the_group_page_says_it():
    offsets = {
        "a": ClockOffset(0.0, 0.005, 0.010),
        "b": ClockOffset(120.0, 0.007, 0.014),
        "c": ClockOffset(-3.0, 0.003, 0.006),
    }
    starts = {"a": 1000.00, "b": 1120.08, "c": 997.03}
    spread = start_spread(starts, offsets)
    assert (spread.first, spread.last) == ("a", "b")
    assert spread.spread_s == pytest.approx(0.08)
    assert spread.uncertainty_s == pytest.approx(0.012)  # a's and b's, the widest at either end
    assert spread.text() == "started within 0.08 s ± 0.01 s"


def test_a_middle_member_with_a_wide_uncertainty_widens_the_spread_s():
    """c's corrected start lies between a's and b's, but its true start may lie 0.05 s after b's."""
    offsets = {"a": ClockOffset(0, 0.001, 0), "b": ClockOffset(0, 0.001, 0), "c": ClockOffset(0, 0.05, 0)}
    spread = start_spread({"a": 0.0, "b": 0.08, "c": 0.079}, offsets)
    assert spread.spread_s == pytest.approx(0.08)
    assert spread.uncertainty_s == pytest.approx(0.05)
    assert spread.text() == "started within 0.08 s ± 0.05 s"


@pytest.mark.parametrize(
    ("spread", "uncertainty", "text"),
    [
        (0.0799999, 0.0099999, "0.08 s ± 0.01 s"),
        (0.5, 0.0004, "0.5000 s ± 0.0004 s"),
        (1.234, 0.25, "1.23 s ± 0.25 s"),
        (0.0000123, 0.0, "0.00001 s ± 0.00000 s"),
    ],
)
def test_the_spread_is_written_to_its_uncertainty_s_first_digit(spread, uncertainty, text):
    assert StartSpread(spread, uncertainty, "a", "b").text() == f"started within {text}"


def test_one_member_started_within_no_time():
    spread = start_spread({"only": 50.0}, {"only": ClockOffset(3.0, 0.2, 0.4)})
    assert (spread.spread_s, spread.uncertainty_s, spread.first, spread.last) == (0.0, 0.0, "only", "only")
    assert spread.text() == "started within 0.00 s ± 0.00 s"


@FAST
@given(
    st.lists(
        st.tuples(st.floats(0, 2), st.floats(-60, 60), st.floats(0, 0.05), st.floats(-1, 1)),
        min_size=2,
        max_size=12,
    )
)
def test_the_true_spread_lies_within_the_stated_uncertainty(members):
    """Each member: its true start (common clock), its host's true offset, the uncertainty of the estimate, and
    where within that uncertainty the estimate fell (-1 to 1)."""
    starts, offsets = {}, {}
    for index, (start, offset, uncertainty, error) in enumerate(members):
        starts[f"m{index}"] = EPOCH + start + offset
        offsets[f"m{index}"] = ClockOffset(offset + error * uncertainty, uncertainty, 2 * uncertainty)
    true_spread = max(start for start, *_ in members) - min(start for start, *_ in members)
    spread = start_spread(starts, offsets)
    assert abs(spread.spread_s - true_spread) <= spread.uncertainty_s + 1e-6
    widest_two = sorted(u for _, _, u, _ in members)[-2:]
    assert spread.uncertainty_s <= sum(widest_two) + 1e-6


def test_a_member_without_an_offset_is_named():
    with pytest.raises(ValueError, match="no clock offset for b"):
        start_spread({"a": 1.0, "b": 2.0}, {"a": ClockOffset(0, 0, 0)})


# ----------------------------------------------------------------------------- windows


def test_all_running_is_from_the_last_start_to_the_first_end():
    found = windows({"a": Window(10.0, 70.0), "b": Window(10.5, 69.0), "c": Window(9.8, 75.0)})
    assert found.all_running == Window(10.5, 69.0)
    assert found.span == Window(9.8, 75.0)
    assert (found.last_started, found.first_done, found.last_done) == ("b", "b", "c")


def test_members_that_never_ran_together_have_no_all_running_window():
    found = windows({"a": Window(0.0, 10.0), "b": Window(10.0, 20.0)})
    assert found.all_running is None
    assert found.span == Window(0.0, 20.0)
    assert found.first_done == "a"


def test_a_run_that_ends_before_it_starts_is_refused():
    with pytest.raises(ValueError, match="b: a run goes from its start to a later end"):
        windows({"a": Window(0.0, 10.0), "b": Window(5.0, 4.0)})


# ----------------------------------------------------------------------------- totals


@st.composite
def laid_out_groups(draw):
    """Members on a millisecond grid of the common clock: each starts at start_ms, measures `seconds` whole seconds
    (sample k ends at start_ms + 1000 k), and ends tail_ms after its last one; its host's clock is off by a whole
    number of milliseconds. Returns the members and the layout the test computes its expectations from."""
    layout = []
    for index in range(draw(st.integers(1, 5))):
        start_ms = draw(st.integers(0, 4000).filter(lambda ms: ms % 1000 != 500))
        seconds = draw(st.integers(1, 20))
        rates = draw(st.lists(st.tuples(st.floats(0, 1e6), st.floats(0, 4e9)), min_size=seconds, max_size=seconds))
        layout.append(
            {
                "name": f"m{index}",
                "start_ms": start_ms,
                "end_ms": start_ms + 1000 * seconds + draw(st.integers(0, 999)),
                "offset_ms": draw(st.integers(-120_000, 120_000)),
                "rates": rates,
                "whole": (draw(st.floats(0, 1e6)), draw(st.floats(0, 4e9))),
            }
        )
    return [member_of(m) for m in layout], layout


def member_of(m):
    def own(ms):
        return EPOCH + (ms + m["offset_ms"]) / 1000

    samples = [(own(m["start_ms"] + 1000 * k), iops, bw) for k, (iops, bw) in enumerate(m["rates"], 1)]
    offset = ClockOffset(m["offset_ms"] / 1000, 0.001, 0.002)
    iops, bw = m["whole"]
    return Member(m["name"], own(m["start_ms"]), own(m["end_ms"]), offset, samples, iops, bw)


def expected_all_running(layout):
    """Each member's mean over the seconds it measured wholly between the last start and the first end, summed."""
    begin, end = max(m["start_ms"] for m in layout), min(m["end_ms"] for m in layout)
    if end <= begin:
        return None
    means = []
    for m in layout:
        inside = [
            rate
            for k, rate in enumerate(m["rates"], 1)
            if m["start_ms"] + 1000 * (k - 1) >= begin and m["start_ms"] + 1000 * k <= end
        ]
        means.append(
            (statistics.fmean(r[0] for r in inside), statistics.fmean(r[1] for r in inside)) if inside else None
        )
    if None in means:
        return "missing"
    return sum(m[0] for m in means), sum(m[1] for m in means)


@FAST
@given(laid_out_groups())
def test_the_all_running_total_is_the_sum_of_the_members_means_over_that_window(group):
    members, layout = group
    total = totals(members).all_running
    expected = expected_all_running(layout)
    if expected is None:
        assert (total.window, total.iops, total.why) == (None, None, "the members never all ran at once")
    elif expected == "missing":
        assert total.iops is None
        assert "no IOPS" in total.why
    else:
        assert (total.iops, total.bytes_per_s) == (pytest.approx(expected[0]), pytest.approx(expected[1]))
        assert total.window.start == pytest.approx(EPOCH + max(m["start_ms"] for m in layout) / 1000)
        assert total.window.end == pytest.approx(EPOCH + min(m["end_ms"] for m in layout) / 1000)
    assert "while every member ran" in total.what


@FAST
@given(laid_out_groups())
def test_the_whole_run_and_span_totals_are_the_members_rates_and_their_io_over_the_span(group):
    members, layout = group
    found = totals(members)
    assert found.whole_runs.iops == pytest.approx(sum(m["whole"][0] for m in layout))
    assert found.whole_runs.bytes_per_s == pytest.approx(sum(m["whole"][1] for m in layout))
    span_ms = max(m["end_ms"] for m in layout) - min(m["start_ms"] for m in layout)
    done = sum(m["whole"][0] * (m["end_ms"] - m["start_ms"]) for m in layout)
    assert found.span.iops == pytest.approx(done / span_ms)
    # A group never does more over its span than its members' whole-run rates added up.
    assert found.span.iops <= found.whole_runs.iops * (1 + 1e-9)


@FAST
@given(laid_out_groups())
def test_the_per_second_series_sums_the_members_samples_at_each_common_second(group):
    members, layout = group
    # Whole seconds counted from the first member's start: a sample k seconds into a member that started d ms after
    # the first is in second round(k + d / 1000), halves up.
    first = min(m["start_ms"] for m in layout)
    expected: dict[int, list[float]] = {}
    for m in layout:
        for k, (iops, _) in enumerate(m["rates"], 1):
            expected.setdefault((m["start_ms"] - first + 1000 * k + 500) // 1000, []).append(iops)
    series = per_second(members)
    assert [second.t for second in series] == pytest.approx(
        [EPOCH + first / 1000 + k for k in sorted(expected)], rel=0, abs=1e-6
    )
    for second, k in zip(series, sorted(expected), strict=True):
        assert second.iops == pytest.approx(sum(expected[k]))
        assert second.members == len(expected[k])
        assert second.every == (len(expected[k]) == len(layout))


def test_two_samples_of_one_member_in_one_second_count_as_their_mean():
    jittery = Member("a", 0.0, 3.0, ClockOffset(0, 0, 0), [(1.0, 100.0, 1e6), (1.4, 300.0, None), (2.0, 50.0, 2e6)])
    steady = Member("b", 0.0, 3.0, ClockOffset(0, 0, 0), [(1.0, 10.0, 1e5), (2.0, 20.0, 2e5)])
    first, second = per_second([jittery, steady])
    assert (first.t, first.iops, first.bytes_per_s, first.every) == (1, 210.0, None, True)
    assert (second.t, second.iops, second.bytes_per_s) == (2, 70.0, 2.2e6)


def test_a_member_without_its_whole_run_figures_leaves_that_total_unknown_and_named():
    members = [
        Member("a", 0.0, 10.0, ClockOffset(0, 0, 0), iops=1000.0, bytes_per_s=4e6),
        Member("b", 0.0, 10.0, ClockOffset(0, 0, 0), iops=None, bytes_per_s=None),
    ]
    whole = totals(members).whole_runs
    assert (whole.iops, whole.bytes_per_s, whole.window) == (None, None, None)
    assert whole.why == "b has no IOPS; b has no bandwidth"
    assert whole.members["a"].iops == 1000.0


def test_members_are_named_once_each():
    twice = [Member("a", 0.0, 1.0, ClockOffset(0, 0, 0)), Member("a", 0.0, 1.0, ClockOffset(0, 0, 0))]
    with pytest.raises(ValueError, match="a is given more than once"):
        totals(twice)


# ----------------------------------------------------------------------------- merged percentiles

PLAT_BITS = 6
PLAT_VAL = 1 << PLAT_BITS


def fio_bucket(ns: int) -> int:
    """The value fio's json+ bins key a latency by: stat.c's plat_val_to_idx, then plat_idx_to_val (the middle of
    the bucket)."""
    msb = ns.bit_length() - 1 if ns else 0
    if msb <= PLAT_BITS:
        return ns
    error_bits = msb - PLAT_BITS
    index = ((error_bits + 1) << PLAT_BITS) + ((ns >> error_bits) & (PLAT_VAL - 1))
    error_bits = (index >> PLAT_BITS) - 1
    return int((1 << (error_bits + PLAT_BITS)) + (index % PLAT_VAL + 0.5) * (1 << error_bits))


def bins_of(latencies: list[int]) -> dict[int, int]:
    bins: dict[int, int] = {}
    for ns in latencies:
        bins[fio_bucket(ns)] = bins.get(fio_bucket(ns), 0) + 1
    return bins


def rank_percentile(latencies: list[int], percent: float) -> float:
    """The p-th percentile of the pooled I/Os as fio reads it: the ceil(p % of N)-th smallest bucketed latency."""
    ordered = sorted(fio_bucket(ns) for ns in latencies)
    return ordered[math.ceil(percent / 100.0 * len(ordered)) - 1] / 1000


members_latencies = st.lists(st.lists(st.integers(1, 10**9), min_size=1, max_size=300), min_size=1, max_size=6)


@FAST
@given(members_latencies)
def test_merged_percentiles_are_the_pooled_latencies_percentiles(raw):
    members = {f"m{i}": MemberLatency(bins_of(latencies), {}) for i, latencies in enumerate(raw)}
    found = group_latency("read", members)
    pooled = [ns for latencies in raw for ns in latencies]
    assert found.merged
    assert found.label == f"merged from {len(raw)} members' json+ latency bins"
    for key, percent in GROUP_PERCENTILES:
        assert found.pooled_us[key] == rank_percentile(pooled, percent)


@FAST
@given(members_latencies)
def test_merged_percentiles_equal_percentiles_of_bins_pooled_by_hand(raw):
    members = {f"m{i}": MemberLatency(bins_of(latencies), {}) for i, latencies in enumerate(raw)}
    by_hand: dict[int, int] = {}
    for member in members.values():
        for ns, count in member.bins_ns.items():
            by_hand[ns] = by_hand.get(ns, 0) + count
    expected = percentiles_from_bins(by_hand, [percent for _, percent in GROUP_PERCENTILES])
    found = group_latency("write", members)
    assert found.pooled_us == {key: expected[percent] / 1000 for key, percent in GROUP_PERCENTILES}


def test_the_pooled_p99_is_neither_the_worst_member_s_nor_their_mean():
    """98 fast I/Os and 2 slow ones put a's p99 among the slow; pooled with b's 100 fast ones, the slow are 1 %."""
    found = group_latency("read", {"a": MemberLatency({100: 98, 5000: 2}, {}), "b": MemberLatency({100: 100}, {})})
    assert found.pooled_us["p99"] == 0.1
    assert found.worst_us["p99"] == 5.0
    assert found.members_us["a"]["p99"] == 5.0


def test_without_every_member_s_bins_the_percentiles_are_not_merged_but_shown_per_member():
    members = {
        "a": MemberLatency({100_000: 10}, {}),
        "b": MemberLatency(None, {"p50": 80.0, "p90": 150.0, "p95": 180.0, "p99": 400.0, "p99_9": 900.0}),
        "c": MemberLatency(None, {"p50": 90.0, "p90": 120.0, "p95": 130.0, "p99": 250.0, "p99_9": None}),
    }
    found = group_latency("read", members)
    assert not found.merged
    assert found.pooled_us is None
    assert found.label == "not merged: b, c have no json+ latency bins"
    assert found.worst_us["p99"] == 400.0
    assert found.median_us["p99"] == 250.0
    assert found.median_us["p50"] == 90.0
    assert found.worst_us["p99_9"] is None  # c's is unknown: the worst cannot be told
    assert found.members_us["a"]["p99_99"] == 100.0


def test_a_stored_summary_gives_its_bins_and_percentiles():
    summary = {
        "read": {"iops": 10.0, "clat_us": {"p50": 12.0, "p99": 40.0}},
        "write": None,
        "latency_bins_ns": {"read": {"12032": 5, "40960": 1}},
    }
    read = member_latency(summary, "read")
    assert read == MemberLatency({12032: 5, 40960: 1}, {"p50": 12.0, "p99": 40.0})
    assert member_latency(summary, "write") is None
    assert member_latency({"read": {"clat_us": {"p99": 3.0}}}, "read") == MemberLatency(None, {"p99": 3.0})


def test_a_direction_no_member_measured_has_no_group_latency():
    assert group_latency("write", {}) is None


# ----------------------------------------------------------------------------- members side by side


def test_the_slowest_the_worst_p99_and_the_spread():
    found = compare_members({"a": 100.0, "b": 80.0, "c": 90.0}, {"a": 300.0, "b": 200.0, "c": 450.0})
    assert (found.slowest, found.worst_p99) == ("b", "c")
    assert found.spread_percent == pytest.approx(20.0)
    assert found.without_iops == found.without_p99 == ()


def test_a_member_without_iops_is_left_out_and_the_spread_is_unknown():
    found = compare_members({"a": 100.0, "b": None, "c": 50.0}, {"a": 300.0, "b": None, "c": None})
    assert (found.slowest, found.worst_p99, found.spread_percent) == ("c", "a", None)
    assert (found.without_iops, found.without_p99) == (("b",), ("b", "c"))


def test_members_that_did_no_io_have_no_spread():
    assert compare_members({"a": 0.0, "b": 0.0}, {}).spread_percent is None
    assert compare_members({"a": 7.0}, {}).spread_percent == 0.0


# ----------------------------------------------------------------------------- group-size sweep


def sizes(count: int) -> list[int]:
    return [2**i for i in range(count)]


def capped(per_member: float, cap_members: int, count: int) -> list[SizePoint]:
    """Total IOPS grow with the members up to cap_members, then the backend gives no more: shared out."""
    points = []
    for n in sizes(count):
        total = per_member * min(n, cap_members)
        points.append(SizePoint(n, total, [total / n] * n))
    return points


@FAST
@given(st.integers(3, 8).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 2))), st.floats(100, 1e6))
def test_the_curve_saturates_where_the_backend_stops_giving_more(case, per_member):
    count, knee = case
    found = saturation(capped(per_member, 2**knee, count))
    assert found.point is not None and found.point.members == 2**knee
    assert found.why.startswith(f"from {2**knee} member{'' if knee == 0 else 's'} (")


@FAST
@given(
    st.integers(4, 8).flatmap(lambda n: st.tuples(st.just(n), st.integers(1, n - 2))),
    st.integers(0, 20),
    st.floats(100, 1e6),
    st.floats(0.1, 0.9),
)
def test_one_size_measured_low_before_the_real_saturation_does_not_end_the_curve(case, dip_seed, per_member, depth):
    count, knee = case
    points = capped(per_member, 2**knee, count)
    dip = dip_seed % knee
    low = points[dip]
    points[dip] = SizePoint(low.members, low.total_iops * (1 - depth), low.member_iops)
    assert saturation(points).point.members == 2**knee


def test_gains_are_judged_per_doubling_so_steps_of_one_member_still_grow():
    """Linear scaling from 1 to 16 members in steps of one: the step from 15 to 16 gains 6.7 %, yet every step
    doubles the IOPS per doubling of the members."""
    points = [SizePoint(n, 1000.0 * n, [1000.0] * n) for n in range(1, 17)]
    found = saturation(points)
    assert found.point is None
    assert found.why == "total IOPS still grew by 10 % or more per doubling up to 16 members"


def test_the_reason_names_the_size_its_iops_and_the_best_larger_group():
    points = [
        SizePoint(1, 10_000.0, [10_000.0]),
        SizePoint(2, 19_000.0, [9_500.0, 9_500.0]),
        SizePoint(4, 20_000.0, [5_000.0] * 4),
        SizePoint(8, 20_400.0, [2_550.0] * 8),
    ]
    found = saturation(points)
    assert found.point == points[1]
    assert found.why == (
        "from 2 members (19k IOPS, 9.5k IOPS a member on average) on, no larger group gave 10 % more IOPS per "
        "doubling; the most was 4 members: 20k IOPS, +5.3 % per doubling"
    )
    assert saturation(points, gain=0.04).point == points[2]


def test_a_curve_of_one_size_has_no_saturation():
    found = saturation([SizePoint(1, 5.0, [5.0])])
    assert found.point is None
    assert found.why == "a curve needs at least two group sizes; the sweep has 1"


@pytest.mark.parametrize(
    ("points", "gain", "problem"),
    [
        ([SizePoint(2, 1.0, [0.5, 0.5]), SizePoint(2, 1.0, [0.5, 0.5])], 0.1, "2 follows 2"),
        ([SizePoint(1, 1.0, [1.0]), SizePoint(2, 1.0, [1.0])], 0.1, "2 members need 2 IOPS figures, not 1"),
        ([SizePoint(1, -1.0, [1.0])], 0.1, "a measured IOPS is 0 or more"),
        ([SizePoint(0, 0.0, [])], 0.1, "at least one member"),
        ([SizePoint(1, 1.0, [1.0])], 0.0, "a threshold is a fraction above 0"),
    ],
)
def test_a_point_that_cannot_be_one_is_refused_by_name(points, gain, problem):
    with pytest.raises(ValueError, match=problem):
        saturation(points, gain)
