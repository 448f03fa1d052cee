"""Where a sweep's curve stops paying: the knee, and the point where the vendor's limit is reached (pure: no Django).

A curve is a sweep's points in the order of its swept axis (QD 1, 2, 4, ... 256, or numjobs x iodepth): each with
its measured total IOPS, its p99 completion latency in µs (None when the output holds none) and, where benchweb
knows one, the theoretical limit IOPS at that point's block size.

The knee (thresholds adjustable, defaults in brackets): the first point P, in axis order, such that

1. no later point measured (1 + IOPS_GROWTH) x P's IOPS or more [10 %]: deeper buys less than that, and
2. some later point's p99 is more than (1 + P99_GROWTH) x P's p99 [50 %]: deeper costs more than that.

Both compare P with every point after it, never only with the next one, so a single measurement that dipped
before the real knee cannot make a knee there: a later point still measured 10 % more than P. A point measured
high by chance early on can (it looks like the plateau), and is shown as the knee; nothing tells it from a real
overshoot such as burst credits running out. The last point is never the knee: nothing comes after it.

A missing p99 (None): such a point cannot be the knee (its p99 condition cannot be judged) and adds nothing to
the later points' p99; its IOPS still count for condition 1. A curve with fewer than MIN_POINTS (3) points has
no knee. When there is no knee the answer says why: IOPS still grew by the threshold or more after every point
(sweep further), IOPS levelled off but p99 never rose enough (a flat curve: depth costs nothing there), or the
p99 needed was missing.

The limit is reached at the first point, in axis order, whose IOPS is at least (1 - LIMIT_TOLERANCE) x its limit
[5 %] (above the limit counts: a burst). Points without a limit are skipped. Reaching the limit says the cloud's
throttle, not the device, set the IOPS from there on; a knee at or after that point is the throttle's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from jobs.figures import exact_number
from jobs.units import format_iops_exact, format_micros

IOPS_GROWTH = 0.10
P99_GROWTH = 0.50
LIMIT_TOLERANCE = 0.05
MIN_POINTS = 3


@dataclass(frozen=True)
class Point:
    axis: float
    iops: float
    p99_us: float | None = None
    limit_iops: float | None = None


@dataclass(frozen=True)
class Rule:
    """The knee's thresholds, as fractions (0.10 is 10 %)."""

    iops_growth: float = IOPS_GROWTH
    p99_growth: float = P99_GROWTH

    def __post_init__(self) -> None:
        for name in ("iops_growth", "p99_growth"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name}: a knee threshold is a fraction above 0, not {getattr(self, name)!r}")

    def text(self) -> str:
        return (
            f"the first point after which no point gives {_percent(self.iops_growth)} more IOPS "
            f"and some point's p99 is more than {_percent(self.p99_growth)} higher"
        )


@dataclass(frozen=True)
class Knee:
    """The knee point, or None with the reason there is none (why); rule is the one applied."""

    point: Point | None
    rule: Rule
    why: str = ""


@dataclass(frozen=True)
class LimitReached:
    point: Point
    tolerance: float


def find_knee(points: Sequence[Point], rule: Rule | None = None) -> Knee:
    """The knee of a curve by the module's rule (its docstring); ValueError names a field that cannot be one."""
    rule = rule or Rule()
    _check(points)
    if len(points) < MIN_POINTS:
        return Knee(None, rule, f"a knee needs at least {MIN_POINTS} points; the curve has {len(points)}")
    levelled = judged = False
    for index, point in enumerate(points[:-1]):
        later = points[index + 1 :]
        if max(p.iops for p in later) >= (1 + rule.iops_growth) * point.iops:
            continue
        levelled = True
        later_p99 = [p.p99_us for p in later if p.p99_us is not None]
        if point.p99_us is None or not later_p99:
            continue
        judged = True
        if max(later_p99) > (1 + rule.p99_growth) * point.p99_us:
            return Knee(point, rule)
    return Knee(None, rule, _why_none(points, rule, levelled, judged))


def _why_none(points: Sequence[Point], rule: Rule, levelled: bool, judged: bool) -> str:
    if not levelled:
        return (
            f"IOPS still grew by {_percent(rule.iops_growth)} or more after every point: "
            f"no knee up to {exact_number(points[-1].axis)} (sweep further)"
        )
    if not judged:
        return "IOPS levelled off, but the points there hold no p99 to tell what going further costs"
    return f"IOPS levelled off, but p99 never rose by more than {_percent(rule.p99_growth)} beyond that: a flat curve"


def limit_reached(points: Sequence[Point], tolerance: float = LIMIT_TOLERANCE) -> LimitReached | None:
    """The first point whose IOPS is within `tolerance` of its limit (or above it); None when none is."""
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance: a fraction from 0 up to 1, not {tolerance!r}")
    _check(points)
    for point in points:
        if point.limit_iops is not None and point.iops >= (1 - tolerance) * point.limit_iops:
            return LimitReached(point, tolerance)
    return None


def knee_sentence(knee: Knee, axis_name: str = "QD") -> str:
    """The knee in words, "knee at QD 16: 18,912 IOPS, p99 1.2 ms", or "no knee: " and the reason."""
    if knee.point is None:
        return f"no knee: {knee.why}"
    point = knee.point
    return (
        f"knee at {axis_name} {exact_number(point.axis)}: {format_iops_exact(round(point.iops))}, "
        f"p99 {format_micros(point.p99_us)}"
    )


def limit_sentence(reached: LimitReached, axis_name: str = "QD") -> str:
    """The limit in words: "limit reached at QD 8: 2,990 IOPS of 3,000 IOPS; the cloud throttles, not the device"."""
    point = reached.point
    return (
        f"limit reached at {axis_name} {exact_number(point.axis)}: {format_iops_exact(round(point.iops))} "
        f"of {format_iops_exact(point.limit_iops)}; the cloud throttles, not the device"
    )


def _check(points: Sequence[Point]) -> None:
    for before, after in pairwise(points):
        if not after.axis > before.axis:
            raise ValueError(
                f"axis: the points must be in increasing axis order; {exact_number(after.axis)} "
                f"follows {exact_number(before.axis)}"
            )
    for point in points:
        if not point.iops >= 0:
            raise ValueError(f"iops: a measured IOPS is 0 or more, not {point.iops!r}")
        if point.p99_us is not None and not point.p99_us > 0:
            raise ValueError(f"p99_us: a latency is above 0 µs, not {point.p99_us!r}")
        if point.limit_iops is not None and not point.limit_iops > 0:
            raise ValueError(f"limit_iops: a limit is above 0 IOPS, not {point.limit_iops!r}")


def _percent(fraction: float) -> str:
    return f"{fraction * 100:g} %"
