"""ruptures' l2 cost from running sums, for the change-point search (jobs/analysis/changepoints.py imports this
module inside detect(), so that numpy and ruptures load when a series is searched, not at start-up)."""

from __future__ import annotations

import numpy as np
from ruptures.base import BaseCost


class CumulativeL2(BaseCost):  # type: ignore[misc]  # ruptures ships no types
    """ruptures' l2 cost (the squared deviations from the segment's mean) from running sums: O(1) a segment."""

    model = "l2_cumulative"

    def __init__(self, min_size: int = 2) -> None:
        self.min_size = min_size

    def fit(self, signal: np.ndarray) -> CumulativeL2:
        self.signal = np.asarray(signal, dtype=float).reshape(-1, 1)  # ruptures reads its length
        flat = self.signal[:, 0]
        self.sums: list[float] = np.concatenate([[0.0], np.cumsum(flat)]).tolist()
        self.squares: list[float] = np.concatenate([[0.0], np.cumsum(flat * flat)]).tolist()
        return self

    def error(self, start: int, end: int) -> float:
        total = self.sums[end] - self.sums[start]
        return max(0.0, self.squares[end] - self.squares[start] - total * total / (end - start))
