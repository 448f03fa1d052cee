"""The knee of a run's per-second series: where a disk bursting on credits falls to its baseline (pure).

A two-level split: the point that leaves the least squared error when each side is taken as one flat level
(one pass over prefix sums). It is accepted only as a clear drop: the first level at least DROP times the
second and apart from it by many times the samples' own scatter, and, where the disk's rates are known, the
second level near the baseline and the first well above it and not far beyond the burst rate.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# Samples each side must have: a lone slow last second is not a knee.
MIN_SIDE = 5
# The burst level is at least this multiple of the level after the knee.
DROP = 1.5
# ... and apart from it by this many times the scatter of the samples around their own level.
SEPARATION = 4.0
# "Roughly the baseline / the burst rate": within this factor.
ROUGHLY = 1.5


@dataclass(frozen=True)
class Knee:
    at_s: float  # the last second served at the burst level, in seconds since the run started
    high: float  # the median level before the knee
    low: float  # ... and after it
    index: int  # the first sample after the knee


def find_knee(
    times: Sequence[float],
    values: Sequence[float],
    *,
    baseline: float | None = None,
    burst: float | None = None,
) -> Knee | None:
    """The knee of a series that drops from a burst level to a baseline, or None when there is none."""
    n = len(values)
    if n != len(times) or n < 2 * MIN_SIDE:
        return None
    split = _best_split(values)
    high, low = statistics.median(values[:split]), statistics.median(values[split:])
    scatter = _scatter(values[:split], high) + _scatter(values[split:], low)
    if high < DROP * low or high - low <= SEPARATION * scatter:
        return None
    if baseline is not None and not (low <= ROUGHLY * baseline < high):
        return None
    if burst is not None and high > ROUGHLY * burst:
        return None
    return Knee(at_s=times[split - 1], high=high, low=low, index=split)


def _best_split(values: Sequence[float]) -> int:
    """The index that splits `values` into two runs of flat level with the least squared error."""
    sums, squares = [0.0], [0.0]
    for value in values:
        sums.append(sums[-1] + value)
        squares.append(squares[-1] + value * value)
    n = len(values)

    def error(k: int) -> float:
        left = squares[k] - sums[k] ** 2 / k
        right_sum = sums[n] - sums[k]
        return left + (squares[n] - squares[k]) - right_sum**2 / (n - k)

    return min(range(MIN_SIDE, n - MIN_SIDE + 1), key=error)


def _scatter(values: Sequence[float], level: float) -> float:
    """The median absolute deviation from `level`, scaled to a standard deviation for normal noise."""
    return 1.4826 * statistics.median(abs(value - level) for value in values)
