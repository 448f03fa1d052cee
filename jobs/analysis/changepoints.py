"""Did a disk's numbers shift to a new level? Change points in one series of runs (pure: no Django).

A series is one metric of one disk under one workload, in the order the runs finished. The method, in steps:

1. Candidates: ruptures' binary segmentation with an L2 cost (computed from cumulative sums, so a segment's
   cost is O(1): ruptures' own l2 takes a variance per segment, 0.1 s for 1,000 runs), on the series divided
   by its median (so one penalty fits IOPS and microseconds alike), with segments of at least MIN_SEGMENT
   runs and a penalty of PENALTY_FACTOR x sigma^2 x log(n), sigma being the noise read robustly from the
   run-to-run differences. The penalty is loose on purpose: candidates are only proposals.
2. Each candidate is tested on the runs between its neighbours, before against after: the medians must
   differ by at least MIN_CHANGE_PERCENT, and Mann-Whitney U (two sided; ranks, so one wild night weighs as
   one run) must give p < ALPHA. The weakest candidate that fails (highest p, then smallest change) is
   dropped and its neighbours retested with wider segments, until every one left passes (as E-Divisive
   prunes its candidates).

A single bad night cannot be a change point: a segment is at least MIN_SEGMENT runs, and the levels are
medians. Values that are None (the tool printed nothing for them) are left out of the series.

numpy, ruptures and scipy are imported by detect(), not with this module: the models import it at every start-up
(web, worker, beat, migrate) and those imports took 2.2 s and ~45 MB there (bench/startup.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

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
    import numpy as np

    values = np.array([p.value for p in points], dtype=float)
    if len(values) < 2 * MIN_SEGMENT:
        return []
    cuts = _candidates(values)
    # A candidate's test depends on its neighbours only: after a drop, only the two beside it are retested.
    known: dict[tuple[int, int, int], tuple[float, float]] = {}
    while cuts:
        bounds = list(zip([0, *cuts[:-1]], cuts, [*cuts[1:], len(values)], strict=True))
        for unknown in set(bounds) - known.keys():
            known[unknown] = _test(values, *unknown)
        tests = [known[b] for b in bounds]
        failing = [(p, -abs(change), i) for i, (p, change) in enumerate(tests) if p >= ALPHA]
        if not failing:
            return [_change_point(points, values, bounds[i], p) for i, (p, _) in enumerate(tests)]
        del cuts[max(failing)[2]]
    return []


def _candidates(values: np.ndarray) -> list[int]:
    """Indexes of the first run of each proposed segment (step 1)."""
    import numpy as np
    import ruptures

    from jobs.analysis.l2_cost import CumulativeL2

    level = float(np.median(np.abs(values))) or 1.0
    scaled = values / level
    sigma = max(_noise(scaled), MIN_RELATIVE_SIGMA)
    penalty = PENALTY_FACTOR * sigma**2 * math.log(len(values))
    algo = ruptures.Binseg(custom_cost=CumulativeL2(min_size=MIN_SEGMENT), min_size=MIN_SEGMENT, jump=1).fit(
        scaled.reshape(-1, 1)
    )
    return [int(cut) for cut in algo.predict(pen=penalty)[:-1]]


def _noise(values: np.ndarray) -> float:
    """The noise's standard deviation from the median absolute run-to-run difference (a step moves one
    difference only, so it hardly counts)."""
    import numpy as np

    differences = np.diff(values)
    return float(1.4826 * np.median(np.abs(differences - np.median(differences))) / math.sqrt(2))


def _test(values: np.ndarray, start: int, cut: int, end: int) -> tuple[float, float]:
    """The p-value of the runs start..cut against cut..end, and the change of their medians in percent of the
    first (step 2). A change under MIN_CHANGE_PERCENT is not tested: it fails whatever its p (1.0)."""
    import numpy as np
    from scipy import stats

    before, after = values[start:cut], values[cut:end]
    change = _percent(float(np.median(before)), float(np.median(after)))
    if abs(change) < MIN_CHANGE_PERCENT:
        return 1.0, change
    return float(stats.mannwhitneyu(before, after, alternative="two-sided").pvalue), change


def _percent(before: float, after: float) -> float:
    # A level of zero has no percent to change by: such a candidate fails MIN_CHANGE_PERCENT and is dropped.
    if before == 0:
        return 0.0
    return (after - before) / abs(before) * 100


def _change_point(points: Sequence[Point], values: np.ndarray, bounds: tuple[int, int, int], p: float) -> ChangePoint:
    import numpy as np

    start, cut, end = bounds
    before, after = values[start:cut], values[cut:end]
    level_before, level_after = float(np.median(before)), float(np.median(after))
    return ChangePoint(
        first=points[cut],
        index=cut,
        before=level_before,
        after=level_after,
        change_percent=_percent(level_before, level_after),
        p_value=p,
        runs_before=len(before),
        runs_after=len(after),
    )
