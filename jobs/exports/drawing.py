"""Charts for the printable reports, as the geometry of an inline SVG (pure: no Django).

A report is printed to PDF, and a Chart.js canvas does not print reliably (it is drawn by script, at screen
resolution, and a page break can cut it), so the report's charts are drawn here on the server: plain shapes
in a fixed viewBox that the template writes as <svg>, which prints as sharp vectors at any size.

The charts:
- `over_time`: each run's share of its promise (measured / baseline) over the period, with the promise (100 %)
  and the threshold a miss falls below; misses are drawn apart, so a reader sees when they happened.
- `bars`: measured against theoretical IOPS, one pair of bars a row, for a comparison.
- `along_axis` and `latency_against_iops`: a sweep's curves, IOPS along its swept axis with the limits and the
  knee, and latency against IOPS (the hockey stick).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Any

WIDTH, HEIGHT = 720.0, 260.0
LEFT, RIGHT, TOP, BOTTOM = 56.0, 12.0, 12.0, 34.0
# Shares above this are drawn at the top edge (a cache-served run at 900 % would flatten every other point).
TOP_SHARE = 2.0


@dataclass(frozen=True)
class Tick:
    at: float
    text: str
    # How the text stands to its place (SVG text-anchor): the first and last time ticks stay inside the chart.
    anchor: str = "middle"


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    miss: bool
    clipped: bool


@dataclass
class OverTime:
    """The geometry of the over-time chart in a WIDTH x HEIGHT viewBox."""

    dots: list[Dot] = field(default_factory=list)
    promise_y: float = 0.0
    threshold_y: float = 0.0
    x_ticks: list[Tick] = field(default_factory=list)
    y_ticks: list[Tick] = field(default_factory=list)
    width: float = WIDTH
    height: float = HEIGHT
    # The plotting area's edges.
    left: float = LEFT
    top: float = TOP
    right: float = WIDTH - RIGHT
    bottom: float = HEIGHT - BOTTOM

    @property
    def misses(self) -> int:
        return sum(dot.miss for dot in self.dots)


def over_time(points: Sequence[tuple[int, float]], threshold: float, zone: tzinfo = UTC) -> OverTime | None:
    """points: (finish in ms since the epoch, measured / promised) in time order; threshold: the share a run
    must reach (0.95); zone: the one the time axis is written in (the reader's). None without points."""
    if not points:
        return None
    first, last = points[0][0], points[-1][0]
    span = max(last - first, 1)
    top = min(max(max(share for _, share in points), 1.0) * 1.1, TOP_SHARE)
    x0, y0, x1, y1 = LEFT, TOP, WIDTH - RIGHT, HEIGHT - BOTTOM

    def x(ms: int) -> float:
        return round(x0 + (x1 - x0) * (ms - first) / span if last > first else (x0 + x1) / 2, 1)

    def y(share: float) -> float:
        return round(y1 - (y1 - y0) * min(share, top) / top, 1)

    chart = OverTime(
        dots=[Dot(x(ms), y(share), share < threshold, share > top) for ms, share in points],
        promise_y=y(1.0),
        threshold_y=y(threshold),
        y_ticks=[Tick(y(share), f"{share * 100:.0f} %") for share in _steps(top)],
    )
    moments = _time_ticks(first, last)
    anchors = ["start", *["middle"] * (len(moments) - 2), "end"] if len(moments) > 1 else ["middle"]
    chart.x_ticks = [Tick(x(ms), _day(ms, zone), anchor) for ms, anchor in zip(moments, anchors, strict=True)]
    return chart


def _steps(top: float) -> list[float]:
    """0, 25 %, 50 % … up to `top`: four to eight lines."""
    step = 0.25 if top <= 1.5 else 0.5
    return [i * step for i in range(int(top / step) + 1)]


def _time_ticks(first: int, last: int, count: int = 5) -> list[int]:
    if last <= first:
        return [first]
    return [round(first + (last - first) * i / (count - 1)) for i in range(count)]


def _day(ms: int, zone: tzinfo) -> str:
    """A tick's day and 24-hour time in the zone (the figure's caption names the zone)."""
    return datetime.fromtimestamp(ms / 1000, zone).strftime("%Y-%m-%d %H:%M")


ROW = 44.0
BAR = 13.0
LABELS = 200.0  # the left column, for each row's label and detail


@dataclass(frozen=True)
class Bar:
    """One row: its label and detail on the left, the measured bar above the theoretical one, each with its value
    written after its end; a width is None where there is no number."""

    label: str
    detail: str
    top: float
    measured: float | None
    theoretical: float | None
    measured_width: float | None
    theoretical_width: float | None

    @property
    def label_y(self) -> float:
        return self.top + 15

    @property
    def detail_y(self) -> float:
        return self.top + 30

    @property
    def measured_y(self) -> float:
        return self.top + 4

    @property
    def theoretical_y(self) -> float:
        return self.top + 4 + BAR + 3

    @property
    def measured_end(self) -> float:
        return LABELS + (self.measured_width or 0) + 5

    @property
    def theoretical_end(self) -> float:
        return LABELS + (self.theoretical_width or 0) + 5


@dataclass
class Bars:
    rows: list[Bar]
    height: float
    width: float = WIDTH
    left: float = LABELS
    bar: float = BAR


def bars(rows: Sequence[tuple[str, str, float | None, float | None]]) -> Bars | None:
    """rows: (label, detail, measured IOPS, theoretical IOPS); None when no row has a number."""
    values = [v for _, _, m, t in rows for v in (m, t) if v is not None and math.isfinite(v)]
    if not values:
        return None
    most = max(values) or 1.0
    room = WIDTH - LABELS - 150.0

    def width(value: float | None) -> float | None:
        return None if value is None else round(max(room * value / most, 1.0), 1)

    drawn = [
        Bar(label, detail, 4.0 + i * ROW, measured, theoretical, width(measured), width(theoretical))
        for i, (label, detail, measured, theoretical) in enumerate(rows)
    ]
    return Bars(rows=drawn, height=8.0 + len(rows) * ROW)


# A sweep's two curves (`along_axis`, `latency_against_iops`) read the sweep page's chart data
# (jobs.sets.facts.series: "curves", each with its points {x, iops, limit_iops, burst_iops, p50_us, p99_us,
# p99_9_us} and its knee), so the report draws what the page's charts draw. A curve's colour is its place, c0 …;
# CURVE_COLOURS of them, then again.
CURVE_COLOURS = 6
PERCENTILES = (("p50_us", "p50"), ("p99_us", "p99"), ("p99_9_us", "p99.9"))


@dataclass(frozen=True)
class Line:
    """A polyline: its points as SVG writes them ("x,y x,y"), its classes (colour and dash) and what it is."""

    points: str
    css: str
    label: str


@dataclass(frozen=True)
class Mark:
    """The knee: a diamond around (x, y), in its curve's colour."""

    x: float
    y: float
    css: str
    label: str

    @property
    def diamond(self) -> str:
        return f"{self.x},{self.y - 7} {self.x + 7},{self.y} {self.x},{self.y + 7} {self.x - 7},{self.y}"


@dataclass
class Plot:
    """A line chart's geometry in a WIDTH x HEIGHT viewBox, with its legend (css, label) in the lines' order."""

    lines: list[Line]
    marks: list[Mark]
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    x_title: str
    y_title: str
    width: float = WIDTH
    height: float = HEIGHT
    left: float = LEFT
    top: float = TOP
    right: float = WIDTH - RIGHT
    bottom: float = HEIGHT - BOTTOM

    @property
    def legend(self) -> list[tuple[str, str]]:
        return [(line.css, line.label) for line in self.lines] + [("knee " + m.css, m.label) for m in self.marks]


def along_axis(curves: Sequence[dict[str, Any]], axis_name: str) -> Plot | None:
    """IOPS at each value of the swept axis (evenly apart, as the page's category axis), one line per curve, its
    theoretical baseline and burst at each point's block size, its knee marked; None when no point has IOPS."""
    values = sorted({p["x"] for c in curves for p in c["points"] if p.get("x") is not None})
    heights = [p.get(k) for c in curves for p in c["points"] for k in ("iops", "limit_iops", "burst_iops")]
    numbers = [float(v) for v in heights if isinstance(v, int | float) and math.isfinite(v) and v > 0]
    if not values or not any(p.get("iops") is not None for c in curves for p in c["points"]):
        return None
    step = _nice(max(numbers) * 1.08 / 4)
    top = step * math.ceil(max(numbers) * 1.08 / step)
    x0, y0, x1, y1 = LEFT, TOP, WIDTH - RIGHT, HEIGHT - BOTTOM
    slot = (x1 - x0) / len(values)  # each value in the middle of its slot, as a category axis places it
    place = {v: round(x0 + slot * (i + 0.5), 1) for i, v in enumerate(values)}

    def y(value: float) -> float:
        return round(y1 - (y1 - y0) * value / top, 1)

    lines, marks, seen = [], [], set()
    for n, curve in enumerate(curves):
        colour, name = f"c{n % CURVE_COLOURS}", _named(curve)
        measured = [(place[p["x"]], y(p["iops"])) for p in curve["points"] if p.get("iops") is not None]
        if measured:
            lines.append(Line(_path(measured), f"curve {colour}", f"{name}IOPS"))
        for key, kind in (("limit_iops", "theoretical"), ("burst_iops", "burst")):
            drawn = [(place[p["x"]], y(p[key])) for p in curve["points"] if p.get(key)
                     and (key == "limit_iops" or p.get("burst_iops") != p.get("limit_iops"))]  # fmt: skip
            if drawn and (key, tuple(drawn)) not in seen:
                seen.add((key, tuple(drawn)))
                at = f" at {curve['block_size']}" if curve.get("block_size") else ""
                lines.append(Line(_path(drawn), f"{kind} {colour}", f"{kind}{at}"))
        knee = curve.get("knee")
        if knee and knee.get("axis") in place and knee.get("iops") is not None:
            label = f"{name}knee at {axis_name} {knee['axis']}"
            marks.append(Mark(place[knee["axis"]], y(knee["iops"]), colour, label))
    y_ticks = [Tick(y(i * step), _iops_tick(i * step)) for i in range(round(top / step) + 1)]
    x_ticks = [Tick(at, str(v)) for v, at in place.items()]
    return Plot(lines, marks, x_ticks, y_ticks, f"{axis_name} (the swept axis)", "IOPS")


def latency_against_iops(curves: Sequence[dict[str, Any]]) -> Plot | None:
    """p50, p99 and p99.9 against measured IOPS, one line each per curve in the order of the swept axis, on a
    logarithmic latency scale; None when no point has both."""
    pairs = [(p["iops"], p[k]) for c in curves for p in c["points"] for k, _ in PERCENTILES
             if p.get("iops") is not None and p.get(k)]  # fmt: skip
    if not pairs:
        return None
    most_iops = max(i for i, _ in pairs) * 1.05 or 1.0
    low = math.floor(math.log10(min(v for _, v in pairs)))
    high = max(math.ceil(math.log10(max(v for _, v in pairs))), low + 1)
    x0, y0, x1, y1 = LEFT, TOP, WIDTH - RIGHT, HEIGHT - BOTTOM

    def x(iops: float) -> float:
        return round(x0 + (x1 - x0) * iops / most_iops, 1)

    def y(micros: float) -> float:
        return round(y1 - (y1 - y0) * (math.log10(micros) - low) / (high - low), 1)

    lines = []
    for n, curve in enumerate(curves):
        for key, name in PERCENTILES:
            drawn = [(x(p["iops"]), y(p[key])) for p in curve["points"] if p.get("iops") is not None and p.get(key)]
            if drawn:
                lines.append(Line(_path(drawn), f"curve c{n % CURVE_COLOURS} {name.replace('.', '_')}",
                                  f"{_named(curve)}{name}"))  # fmt: skip
    y_ticks = [Tick(y(10.0**e), _micros_tick(10.0**e)) for e in range(low, high + 1)]
    step = _nice(most_iops / 5)
    x_ticks = [Tick(x(i * step), _iops_tick(i * step)) for i in range(int(most_iops / step) + 1)]
    return Plot(lines, [], x_ticks, y_ticks, "measured IOPS", "completion latency (log scale)")


def _named(curve: dict[str, Any]) -> str:
    return f"{curve['label']} — " if curve.get("label") else ""


def _path(points: Sequence[tuple[float, float]]) -> str:
    return " ".join(f"{x},{y}" for x, y in points)


def _nice(rough: float) -> float:
    """The 1, 2, 2.5 or 5 × 10^n step at or above `rough`."""
    if rough <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(rough))
    return next(float(f * power) for f in (1, 2, 2.5, 5, 10) if f * power >= rough)


def _iops_tick(value: float) -> str:
    for size, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def _micros_tick(value: float) -> str:
    for size, suffix in ((1e6, " s"), (1e3, " ms")):
        if value >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g} µs"
