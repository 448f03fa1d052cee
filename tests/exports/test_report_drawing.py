"""The printable reports' SVG geometry (jobs/exports/drawing.py, pure): every run is placed where its share of
the promise says, misses are told apart, nothing is drawn outside the chart."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from jobs.exports import drawing

DAY = 86_400_000


def test_each_run_is_placed_by_its_share_and_the_misses_are_marked():
    chart = drawing.over_time([(0, 1.0), (DAY, 0.5), (2 * DAY, 0.96), (3 * DAY, 0.94)], threshold=0.95)
    assert chart is not None
    assert [dot.miss for dot in chart.dots] == [False, True, False, True]
    assert chart.misses == 2
    # Time runs left to right across the whole plot; a lower share is drawn lower (a larger y).
    assert chart.dots[0].x == chart.left and chart.dots[-1].x == chart.right
    assert chart.dots[1].y > chart.dots[3].y > chart.dots[2].y > chart.dots[0].y
    assert chart.dots[0].y == chart.promise_y and chart.threshold_y > chart.promise_y
    assert [tick.text for tick in chart.y_ticks][:2] == ["0 %", "25 %"]
    assert chart.x_ticks[0].text == "1970-01-01 00:00" and chart.x_ticks[-1].anchor == "end"


def test_a_run_far_above_the_promise_is_drawn_at_the_top_edge_and_flagged():
    chart = drawing.over_time([(0, 9.0), (DAY, 1.0)], threshold=0.95)
    assert chart is not None
    assert chart.dots[0].clipped and chart.dots[0].y == chart.top
    assert not chart.dots[1].clipped


def test_no_runs_draw_no_chart_and_one_run_stands_in_the_middle():
    assert drawing.over_time([], threshold=0.95) is None
    chart = drawing.over_time([(5 * DAY, 0.8)], threshold=0.95)
    assert chart is not None and chart.dots[0].x == (chart.left + chart.right) / 2


@given(st.lists(st.tuples(st.integers(0, 10**13), st.floats(0, 1e6)), min_size=1, max_size=60),
       st.floats(0.01, 1.0))  # fmt: skip
def test_every_dot_lies_inside_the_plot(points, threshold):
    chart = drawing.over_time(sorted(points), threshold)
    assert chart is not None and len(chart.dots) == len(points)
    for dot in chart.dots:
        assert chart.left <= dot.x <= chart.right and chart.top <= dot.y <= chart.bottom


def test_bars_are_scaled_to_the_largest_figure_and_a_missing_one_has_no_bar():
    chart = drawing.bars([("A", "4k", 3000.0, 6000.0), ("B", "4k", None, 1500.0)])
    assert chart is not None
    a, b = chart.rows
    assert a.theoretical_width == 2 * a.measured_width
    assert b.measured_width is None and b.theoretical_width == a.theoretical_width / 4
    assert b.top > a.top and chart.height >= b.top + drawing.ROW
    assert drawing.bars([("A", "", None, None)]) is None
