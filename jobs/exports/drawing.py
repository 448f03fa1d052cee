"""Charts for the printable reports, as the geometry of an inline SVG (pure: no Django).

A report is printed to PDF, and a Chart.js canvas does not print reliably (it is drawn by script, at screen
resolution, and a page break can cut it), so the report's charts are drawn here on the server: plain shapes
in a fixed viewBox that the template writes as <svg>, which prints as sharp vectors at any size.

Two charts:
- `over_time`: each run's share of its promise (measured / baseline) over the period, with the promise (100 %)
  and the threshold a miss falls below; misses are drawn apart, so a reader sees when they happened.
- `bars`: measured against theoretical IOPS, one pair of bars a row, for a comparison.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo

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
