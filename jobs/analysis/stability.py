"""How steady a run was inside itself, where in the week a disk is slow, and which drops several hosts of a site
shared (pure: no Django).

A run's stability is read from its per-second IOPS (read + write, as fio logged them) and its summary's completion
latency percentiles:

- the coefficient of variation: the population standard deviation over the mean, so a run flat at 4,000 reads 0
  and one that swings by half its level reads about 0.5;
- p99/p50: how far the slow tail is from the typical I/O (1 is a perfectly even disk);
- the share of seconds below DIP_FRACTION (80 %) of the run's own median: the seconds a neighbour took.

A shared drop is a run below DIP_FRACTION of its disk x profile median that overlaps in time, or finishes in the
same UTC hour as, such a run of a disk on a DIFFERENT host of the same site: one host's bad night is that host's,
two hosts' together point at something they share (the array, the network, the hypervisor's neighbour).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

DIP_FRACTION = 0.8
HOUR_S = 3600
WEEK_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def coefficient_of_variation(values: Sequence[float]) -> float | None:
    """Standard deviation over mean of a series; None for fewer than two values or a mean of zero."""
    if len(values) < 2:
        return None
    import numpy as np  # here, not at start-up: the pages import this module (bench/startup.py)

    series = np.asarray(values, dtype=float)
    mean = float(series.mean())
    return float(series.std()) / mean if mean > 0 else None


def share_below_median(values: Sequence[float], fraction: float = DIP_FRACTION) -> float | None:
    """The share (0-1) of values below `fraction` of their median; None without values."""
    if not values:
        return None
    floor = fraction * statistics.median(values)
    return sum(1 for value in values if value < floor) / len(values)


def tail_ratio(p99: float | None, p50: float | None) -> float | None:
    """p99 over p50 of a latency distribution; None when either is missing or p50 is not positive."""
    if p99 is None or p50 is None or p50 <= 0:
        return None
    return p99 / p50


def hour_of_week(epoch_s: float, zone: tzinfo | None = None) -> tuple[int, int]:
    """(weekday, hour) of a time in seconds since the Unix epoch, on the zone's wall clock (UTC when none): Monday
    is 0 (1970-01-01 was a Thursday). A half-hour zone's hour 5 is 05:00-05:59 there (Asia/Kolkata)."""
    if zone is not None:
        local = datetime.fromtimestamp(epoch_s, zone)
        return local.weekday(), local.hour
    hours = int(epoch_s // HOUR_S)
    return (hours // 24 + 3) % 7, hours % 24


def week_grid(
    points: Iterable[tuple[float, float | None, float | None, str]], zone: tzinfo | None = None
) -> list[list[dict[str, Any]]]:
    """7 x 24 cells (Monday first, hour 0 first, on the zone's wall clock: UTC when none) of (epoch seconds,
    IOPS, p99 µs, profile) points: per cell the number of points, the medians of the IOPS and the p99 latency
    reported (None where none was), and the median of each point's IOPS and p99 over its profile's median over
    every point (`iops_ratio`, `p99_ratio`): a 1M sequential profile beside a 4k random one does not paint the
    hours it runs in as fast or slow."""
    rows = list(points)
    usual_iops = _medians((profile, level) for _, level, _, profile in rows)
    usual_p99 = _medians((profile, tail) for _, _, tail, profile in rows)
    cells: list[list[dict[str, list[float]]]] = [
        [{"iops": [], "p99": [], "iops_ratio": [], "p99_ratio": []} for _ in range(24)] for _ in range(7)
    ]
    runs = [[0] * 24 for _ in range(7)]
    for at, level, tail, profile in rows:
        day, hour = hour_of_week(at, zone)
        runs[day][hour] += 1
        cell = cells[day][hour]
        if level is not None:
            cell["iops"].append(level)
            if usual_iops.get(profile):
                cell["iops_ratio"].append(level / usual_iops[profile])
        if tail is not None:
            cell["p99"].append(tail)
            if usual_p99.get(profile):
                cell["p99_ratio"].append(tail / usual_p99[profile])
    return [
        [
            {
                "runs": runs[d][h],
                "median_iops": _median(cells[d][h]["iops"]),
                "median_p99_us": _median(cells[d][h]["p99"]),
                "iops_ratio": _median(cells[d][h]["iops_ratio"]),
                "p99_ratio": _median(cells[d][h]["p99_ratio"]),
            }
            for h in range(24)
        ]
        for d in range(7)
    ]


def _medians(pairs: Iterable[tuple[str, float | None]]) -> dict[str, float]:
    grouped: dict[str, list[float]] = {}
    for key, value in pairs:
        if value is not None:
            grouped.setdefault(key, []).append(value)
    return {key: statistics.median(values) for key, values in grouped.items()}


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


@dataclass(frozen=True)
class Drop:
    """A run below DIP_FRACTION of its disk x profile median: its I/O from start_s to end_s (epoch seconds)."""

    run_id: int
    disk_id: int
    host_id: int
    start_s: float
    end_s: float
    iops: float
    median_iops: float

    @property
    def hour(self) -> int:
        return int(self.end_s // HOUR_S)

    def meets(self, other: Drop) -> bool:
        """Overlapping in time, or finished in the same UTC hour."""
        overlap = self.start_s <= other.end_s and other.start_s <= self.end_s
        return overlap or self.hour == other.hour


def drops(runs: Iterable[tuple[int, int, int, str, float, float, float]]) -> list[Drop]:
    """The drops among runs given as (run, disk, host, profile, start_s, end_s, IOPS): each run is held against
    the median IOPS of its disk x profile over the same runs."""
    rows = list(runs)
    levels: dict[tuple[int, str], list[float]] = {}
    for _, disk, _, profile, _, _, iops in rows:
        levels.setdefault((disk, profile), []).append(iops)
    medians = {key: statistics.median(values) for key, values in levels.items()}
    return [
        Drop(run, disk, host, start, end, iops, medians[(disk, profile)])
        for run, disk, host, profile, start, end, iops in rows
        if iops < DIP_FRACTION * medians[(disk, profile)]
    ]


def shared(found: Sequence[Drop]) -> list[list[Drop]]:
    """Drops linked across hosts (meets(), different host), grouped transitively; only groups spanning two hosts
    or more, each in time order, earliest group first. The caller passes the drops of one site."""
    parent = list(range(len(found)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    ordered = sorted(range(len(found)), key=lambda i: found[i].start_s)
    for position, i in enumerate(ordered):
        # Sorted by start: later drops that start after this one's hour and end cannot meet it.
        for j in ordered[position + 1 :]:
            if found[j].start_s > max(found[i].end_s, (found[i].hour + 1) * HOUR_S):
                break
            if found[i].host_id != found[j].host_id and found[i].meets(found[j]):
                parent[root(j)] = root(i)
    groups: dict[int, list[Drop]] = {}
    for i in ordered:
        groups.setdefault(root(i), []).append(found[i])
    spanning = [group for group in groups.values() if len({d.host_id for d in group}) > 1]
    return sorted(spanning, key=lambda group: group[0].start_s)
