"""Did a disk's numbers shift to a new level? Change points in one series of runs (pure: no Django).

A series is one metric of one disk under one workload, in the order the runs finished. The method, in steps:

1. Candidates: ruptures' binary segmentation with an L2 cost, on the series divided by its median (so one
   penalty fits IOPS and microseconds alike), with segments of at least MIN_SEGMENT runs and a penalty of
   PENALTY_FACTOR x sigma^2 x log(n), sigma being the noise read robustly from the run-to-run differences. The
   penalty is loose on purpose: candidates are only proposals.
2. Each candidate is tested on the runs between its neighbours, before against after: Mann-Whitney U (two
   sided; ranks, so one wild night weighs as one run) must give p < ALPHA, and the medians must differ by at
   least MIN_CHANGE_PERCENT. The weakest candidate that fails is dropped and the rest retested with wider
   segments, until every one left passes (as E-Divisive prunes its candidates).

A single bad night cannot be a change point: a segment is at least MIN_SEGMENT runs, and the levels are
medians. Values that are None (the tool printed nothing for them) are left out of the series.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import ruptures
from scipy import stats

ALPHA = 0.01
MIN_SEGMENT = 3
MIN_CHANGE_PERCENT = 5.0
PENALTY_FACTOR = 2.0
# The noise floor relative to the median: a series measured to the last digit (a rate-limited run) has no
# noise, and a zero sigma would make every wobble a candidate. The test decides anyway.
MIN_RELATIVE_SIGMA = 1e-3

METRICS = {
    "iops": "total IOPS",
    "bandwidth": "bandwidth",
    "p99_latency": "p99 latency",
}
LOWER_IS_BETTER = {"p99_latency"}


@dataclass(frozen=True)
class Point:
    """One run of a series: its id, when it finished (ms since the epoch) and its value."""

    run_id: int
    finished_ms: int
    value: float


@dataclass(frozen=True)
class ChangePoint:
    """A level shift: `first` is the first run at the new level; levels are the medians either side."""

    first: Point
    index: int
    before: float
    after: float
    change_percent: float
    p_value: float
    runs_before: int
    runs_after: int

    def direction(self, metric: str) -> str:
        """'better' or 'worse' for the metric: lower latency is better, more IOPS or bandwidth is better."""
        higher = self.after > self.before
        return "worse" if higher == (metric in LOWER_IS_BETTER) else "better"


def detect(points: Sequence[Point]) -> list[ChangePoint]:
    """The significant level shifts of a series in time order, oldest first (see the module's steps)."""
    values = np.array([p.value for p in points], dtype=float)
    if len(values) < 2 * MIN_SEGMENT:
        return []
    cuts = _candidates(values)
    while cuts:
        tests = [_test(values, cuts, i) for i in range(len(cuts))]
        failing = [(p, i) for i, (p, change) in enumerate(tests) if p >= ALPHA or abs(change) < MIN_CHANGE_PERCENT]
        if not failing:
            return [_change_point(points, values, cuts, i, p) for i, (p, _) in enumerate(tests)]
        del cuts[max(failing)[1]]
    return []


def _candidates(values: np.ndarray) -> list[int]:
    """Indexes of the first run of each proposed segment (step 1)."""
    level = float(np.median(np.abs(values))) or 1.0
    scaled = values / level
    sigma = max(_noise(scaled), MIN_RELATIVE_SIGMA)
    penalty = PENALTY_FACTOR * sigma**2 * math.log(len(values))
    algo = ruptures.Binseg(model="l2", min_size=MIN_SEGMENT, jump=1).fit(scaled.reshape(-1, 1))
    return [int(cut) for cut in algo.predict(pen=penalty)[:-1]]


def _noise(values: np.ndarray) -> float:
    """The noise's standard deviation from the median absolute run-to-run difference (a step moves one
    difference only, so it hardly counts)."""
    differences = np.diff(values)
    return float(1.4826 * np.median(np.abs(differences - np.median(differences))) / math.sqrt(2))


def _segments(values: np.ndarray, cuts: list[int], i: int) -> tuple[np.ndarray, np.ndarray]:
    start = cuts[i - 1] if i > 0 else 0
    end = cuts[i + 1] if i + 1 < len(cuts) else len(values)
    return values[start : cuts[i]], values[cuts[i] : end]


def _test(values: np.ndarray, cuts: list[int], i: int) -> tuple[float, float]:
    """Candidate i's p-value and change in percent of the level before (step 2)."""
    before, after = _segments(values, cuts, i)
    if np.ptp(np.concatenate([before, after])) == 0:
        return 1.0, 0.0
    p_value = float(stats.mannwhitneyu(before, after, alternative="two-sided").pvalue)
    return p_value, _percent(float(np.median(before)), float(np.median(after)))


def _percent(before: float, after: float) -> float:
    # A level of zero has no percent to change by: such a candidate fails MIN_CHANGE_PERCENT and is dropped.
    if before == 0:
        return 0.0
    return (after - before) / abs(before) * 100


def _change_point(points: Sequence[Point], values: np.ndarray, cuts: list[int], i: int, p: float) -> ChangePoint:
    before, after = _segments(values, cuts, i)
    level_before, level_after = float(np.median(before)), float(np.median(after))
    return ChangePoint(
        first=points[cuts[i]],
        index=cuts[i],
        before=level_before,
        after=level_after,
        change_percent=_percent(level_before, level_after),
        p_value=p,
        runs_before=len(before),
        runs_after=len(after),
    )
