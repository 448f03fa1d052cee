"""The knee and the limit of a sweep's curve (jobs/analysis/curves.py), on synthetic curves whose answer is known:
saturating (IOPS = cap x QD / (QD + k), latency by Little's law), a hard knee, flat, still growing, noisy, with a
dip, with p99 missing, and clipped at a limit. Pure functions: no database."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from jobs.analysis.curves import Point, Rule, find_knee, knee_sentence, limit_reached, limit_sentence

FAST = settings(max_examples=200, deadline=None, database=None)
# Run-to-run noise, as a fraction either way, under which a saturating curve's knee moves by at most one step of a
# doubling axis (the noisy test's docstring derives it; at 5 % the property fails).
NOISE = 0.02

caps = st.floats(1e3, 2e6)
lengths = st.integers(5, 10)
tail_factors = st.floats(1.0, 4.0)  # p99 over the mean latency


def doubling(length: int) -> list[int]:
    return [2**i for i in range(length)]


def saturating(length: int, cap: float, k: float, tail: float) -> list[Point]:
    """A closed loop at queue depth QD: IOPS = cap x QD / (QD + k); p99 = tail x QD / IOPS (Little's law), in µs."""
    points = []
    for qd in doubling(length):
        iops = cap * qd / (qd + k)
        points.append(Point(qd, iops, tail * qd / iops * 1e6))
    return points


def hard_knee(length: int, knee_index: int, per_qd: float, tail: float) -> list[Point]:
    """IOPS doubling with QD up to 2**knee_index, flat after it; the latency flat, then doubling."""
    points = []
    for qd in doubling(length):
        iops = per_qd * min(qd, 2**knee_index)
        points.append(Point(qd, iops, tail * qd / iops * 1e6))
    return points


def noisy(points: list[Point], factors: list[tuple[float, float]]) -> list[Point]:
    return [
        Point(p.axis, p.iops * a, p.p99_us * b if p.p99_us else None)
        for p, (a, b) in zip(points, factors, strict=False)
    ]


def noise(length: int, bound: float) -> st.SearchStrategy[list[tuple[float, float]]]:
    factor = st.floats(1 - bound, 1 + bound)
    return st.lists(st.tuples(factor, factor), min_size=length, max_size=length)


def index_of(points: list[Point], point: Point | None) -> int | None:
    return None if point is None else [p.axis for p in points].index(point.axis)


# ----------------------------------------------------------------------------- known knees


@FAST
@given(lengths, caps, st.floats(0.05, 64), tail_factors)
def test_a_saturating_curve_s_knee_is_the_first_depth_past_which_the_rest_gains_under_10_percent(length, cap, k, tail):
    points = saturating(length, cap, k, tail)
    last = doubling(length)[-1]
    # The rest of a saturating curve peaks at its last point: gain = IOPS(last) / IOPS(qd), in closed form.
    expected = next(
        (i for i, qd in enumerate(doubling(length)[:-1]) if last * (qd + k) / (qd * (last + k)) < 1.1),
        None,
    )
    knee = find_knee(points)
    assert index_of(points, knee.point) == expected
    assert knee.rule == Rule(0.10, 0.50)
    if expected is None:
        assert "still grew by 10 % or more after every point" in knee.why


@FAST
@given(lengths.flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 2))), caps, tail_factors)
def test_a_hard_knee_is_found_where_the_iops_stop(length_and_knee, per_qd, tail):
    length, knee_index = length_and_knee
    points = hard_knee(length, knee_index, per_qd, tail)
    assert index_of(points, find_knee(points).point) == knee_index


@FAST
@given(
    lengths.flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n - 2), noise(n, 0.04))),
    caps,
    tail_factors,
)
def test_a_hard_knee_stands_noise_of_4_percent(case, per_qd, tail):
    length, knee_index, factors = case
    points = noisy(hard_knee(length, knee_index, per_qd, tail), factors)
    assert index_of(points, find_knee(points).point) == knee_index


@FAST
@given(
    st.integers(7, 10).flatmap(lambda n: st.tuples(st.just(n), noise(n, NOISE))),
    caps,
    st.floats(0.05, 16),
    tail_factors,
)
def test_a_noisy_saturating_curve_s_knee_is_within_one_step_of_the_noiseless_one(case, cap, k, tail):
    """Noise d either way moves a point's gain over the rest by at most (1 + d) / (1 - d). A doubling axis halves
    the gain's excess over 1 a step, so for d <= 2 % no point two steps before the noiseless knee, nor one step
    after it, lands on the other side of 10 %; the one after must not be the last point (it needs a later p99)."""
    length, factors = case
    clean = saturating(length, cap, k, tail)
    expected = index_of(clean, find_knee(clean).point)
    assume(expected is not None and expected <= length - 3)
    found = index_of(clean, find_knee(noisy(clean, factors)).point)
    assert found is not None and abs(found - expected) <= 1


@FAST
@given(
    lengths.flatmap(lambda n: st.tuples(st.just(n), st.integers(1, n - 2))).flatmap(
        lambda c: st.tuples(st.just(c), st.integers(0, c[1] - 1), st.floats(0.0, 0.9))
    ),
    caps,
    tail_factors,
)
def test_a_single_dip_before_the_real_knee_makes_no_knee_there(case, per_qd, tail):
    (length, knee_index), dip_index, depth = case
    points = hard_knee(length, knee_index, per_qd, tail)
    dipped = points[dip_index]
    points[dip_index] = Point(dipped.axis, dipped.iops * (1 - depth), dipped.p99_us * 3)
    assert index_of(points, find_knee(points).point) == knee_index


# ----------------------------------------------------------------------------- flat, growing, missing, short


@FAST
@given(lengths, caps, tail_factors)
def test_flat_iops_whose_latency_rises_with_depth_has_its_knee_at_the_first_point(length, iops, tail):
    points = [Point(qd, iops, tail * qd / iops * 1e6) for qd in doubling(length)]
    assert find_knee(points).point == points[0]


@FAST
@given(lengths, caps, st.floats(10, 1e5))
def test_a_flat_curve_flat_in_latency_too_has_no_knee_and_says_so(length, iops, p99):
    knee = find_knee([Point(qd, iops, p99) for qd in doubling(length)])
    assert knee.point is None
    assert knee.why == "IOPS levelled off, but p99 never rose by more than 50 % beyond that: a flat curve"


def test_iops_growing_all_the_way_has_no_knee_and_asks_for_a_longer_sweep():
    knee = find_knee([Point(qd, 1000 * qd, 200) for qd in doubling(9)])
    assert knee.point is None
    assert knee_sentence(knee) == (
        "no knee: IOPS still grew by 10 % or more after every point: no knee up to 256 (sweep further)"
    )


def test_a_point_without_p99_is_never_the_knee_the_next_one_that_holds_is():
    points = hard_knee(8, 3, 5000, 2)
    points[3] = Point(points[3].axis, points[3].iops, None)
    assert find_knee(points).point == points[4]


def test_a_levelled_curve_without_any_p99_has_no_knee_and_says_the_p99_is_missing():
    knee = find_knee([Point(qd, 5000, None) for qd in doubling(6)])
    assert knee.point is None and "hold no p99" in knee.why


@pytest.mark.parametrize("count", [0, 1, 2])
def test_fewer_than_three_points_have_no_knee(count):
    knee = find_knee([Point(qd, 5000, 100 * qd) for qd in doubling(count)])
    assert knee.point is None and knee.why == f"a knee needs at least 3 points; the curve has {count}"


def test_the_thresholds_are_adjustable_and_named_in_the_rule():
    points = saturating(9, 20000, 4, 2)
    strict = Rule(iops_growth=0.02, p99_growth=0.5)
    assert find_knee(points, strict).point.axis > find_knee(points).point.axis
    assert find_knee(points, strict).rule.text() == (
        "the first point after which no point gives 2 % more IOPS and some point's p99 is more than 50 % higher"
    )


# ----------------------------------------------------------------------------- the limit


@FAST
@given(lengths, caps, st.floats(0.05, 64), st.floats(0.05, 0.95), tail_factors)
def test_a_curve_clipped_at_its_limit_reaches_it_at_the_first_clipped_point(length, cap, k, share, tail):
    limit = share * cap
    clean = saturating(length, cap, k, tail)
    clipped = [Point(p.axis, min(p.iops, limit), p.p99_us, limit) for p in clean]
    first = next((i for i, p in enumerate(clean) if p.iops >= limit), None)
    # Clipped somewhere, and not already within the tolerance one point earlier.
    assume(first is not None and (first == 0 or clean[first - 1].iops < 0.95 * limit))
    reached = limit_reached(clipped)
    assert reached is not None and reached.point == clipped[first] and reached.tolerance == 0.05


def test_within_5_percent_of_the_limit_counts_as_reached_and_points_without_a_limit_are_skipped():
    points = [
        Point(1, 2000, 300, None),
        Point(2, 2900, 400, None),
        Point(4, 2860, 800, 3000),
        Point(8, 3000, 1600, 3000),
    ]
    assert limit_reached(points).point == points[2]
    assert limit_reached(points, tolerance=0.01).point == points[3]
    assert limit_reached([Point(1, 2000, 300, 3000)]) is None


def test_the_sentences_read_as_the_issue_writes_them():
    points = [Point(4, 9000, 400), Point(8, 15000, 600), Point(16, 18900, 1200), Point(32, 19300, 2400)]
    assert knee_sentence(find_knee(points)) == "knee at QD 16: 18,900 IOPS, p99 1.2 ms"
    assert (
        knee_sentence(find_knee(points), "numjobs × iodepth") == "knee at numjobs × iodepth 16: 18,900 IOPS, p99 1.2 ms"
    )
    reached = limit_reached([Point(4, 2100, 500, 3000), Point(8, 2990.4, 900, 3000)])
    assert limit_sentence(reached) == (
        "limit reached at QD 8: 2,990 IOPS of 3,000 IOPS; the cloud throttles, not the device"
    )


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("points", "field"),
    [
        ([Point(1, 100, 10), Point(1, 200, 20), Point(4, 300, 30)], "axis"),
        ([Point(2, 100, 10), Point(1, 200, 20), Point(4, 300, 30)], "axis"),
        ([Point(1, -1, 10), Point(2, 200, 20), Point(4, 300, 30)], "iops"),
        ([Point(1, float("nan"), 10), Point(2, 200, 20), Point(4, 300, 30)], "iops"),
        ([Point(1, 100, 0), Point(2, 200, 20), Point(4, 300, 30)], "p99_us"),
        ([Point(1, 100, 10, 0), Point(2, 200, 20), Point(4, 300, 30)], "limit_iops"),
    ],
)
def test_a_curve_that_cannot_be_one_is_refused_naming_the_field(points, field):
    with pytest.raises(ValueError, match=f"^{field}: "):
        find_knee(points)


@pytest.mark.parametrize(("rule", "field"), [({"iops_growth": 0}, "iops_growth"), ({"p99_growth": -0.5}, "p99_growth")])
def test_thresholds_that_are_not_fractions_above_zero_are_refused_naming_the_field(rule, field):
    with pytest.raises(ValueError, match=f"^{field}: "):
        Rule(**rule)


def test_a_limit_tolerance_outside_0_to_1_is_refused():
    with pytest.raises(ValueError, match=r"^tolerance: "):
        limit_reached([], tolerance=1.5)
