"""The canonical result summary every parser returns, and the arithmetic the parsers share (pure: no Django).

Units are settled here so no caller has to ask: bytes per second and microseconds. A value the tool did not
report is None, never an estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

# The percentiles a summary carries: (key, percent).
PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p95", 95.0), ("p99", 99.0), ("p99_9", 99.9))


class ParseError(ValueError):
    """The text is not tool output a parser understands; the message says what was expected and where."""


@dataclass
class ParseResult:
    format: str  # "fio-json" | "fio-text" | "fio-terse" | "ndisk64"
    summary: dict[str, Any]
    # Text the tool printed besides its results ("fio: pid=..., err=28/..."), and what the parser noticed.
    diagnostics: list[str] = field(default_factory=list)
    # One {"job", "index", "errno", "message"} per job that reported an error; message may be None.
    job_errors: list[dict[str, Any]] = field(default_factory=list)
    # What the tool said it was configured with (fio job options, ndisk64 header labels), as printed.
    settings: dict[str, str] = field(default_factory=dict)
    # fio json+ only: completion-latency histogram per direction, {latency ns: count}, summed over jobs.
    latency_bins: dict[str, dict[int, int]] | None = None

    @property
    def failed(self) -> bool:
        return bool(self.job_errors)


@dataclass
class DirectionStats:
    """One direction (read, write or mixed) of one fio job entry, in summary units."""

    iops: float
    bw_bytes_per_s: float
    ios: float  # completed I/Os: the weight when means are merged
    clat_mean_us: float | None = None
    clat_max_us: float | None = None
    percentiles_us: dict[float, float] = field(default_factory=dict)
    bins_ns: dict[int, int] | None = None


def finite(value: Any) -> float | None:
    """A float, or None for what is missing, not a number, or infinite (fio can print nan and inf)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def percentiles_from_bins(bins: dict[int, int], percents: list[float]) -> dict[float, float]:
    """fio's own rule (stat.c calc_clat_percentiles): the first bin where the running count reaches p% of all.

    Applied to merged bins this gives the percentiles fio would have printed with group_reporting.
    """
    total = sum(bins.values())
    if total <= 0:
        return {}
    result: dict[float, float] = {}
    ordered = sorted(bins.items())
    for percent in sorted(percents):
        running = 0
        for value, count in ordered:
            running += count
            if running >= percent / 100.0 * total:
                result[percent] = float(value)
                break
    return result


def _lookup(percentiles: dict[float, float], percent: float) -> float | None:
    for key, value in percentiles.items():
        if abs(key - percent) < 1e-6:
            return value
    return None


def merge_direction(parts: list[DirectionStats]) -> dict[str, Any] | None:
    """Sum throughput over jobs; merge latency only where the numbers allow it honestly.

    The mean is weighted by I/O count and the max is the max. Percentiles of several jobs cannot be combined
    from their percentiles, only from their histograms (json+ bins); without bins they are None.
    """
    parts = [part for part in parts if part.ios > 0 or part.iops > 0]
    if not parts:
        return None
    weight = sum(part.ios for part in parts)
    means = [(part.clat_mean_us, part.ios) for part in parts if part.clat_mean_us is not None]
    maxes = [part.clat_max_us for part in parts if part.clat_max_us is not None]
    mean = None
    if len(means) == 1 == len(parts):
        mean = means[0][0]
    elif len(means) == len(parts) and weight > 0:
        mean = sum(m * ios for m, ios in means) / weight
    points = [percent for _, percent in PERCENTILES]
    if all(part.bins_ns for part in parts):
        merged: dict[int, int] = {}
        for part in parts:
            for value, count in (part.bins_ns or {}).items():
                merged[value] = merged.get(value, 0) + count
        percentiles = {p: ns / 1000.0 for p, ns in percentiles_from_bins(merged, points).items()}
    elif len(parts) == 1:
        percentiles = parts[0].percentiles_us
    else:
        percentiles = {}
    clat: dict[str, float | None] = {"mean": mean, "max": max(maxes) if len(maxes) == len(parts) else None}
    for key, percent in PERCENTILES:
        clat[key] = _lookup(percentiles, percent)
    return {
        "iops": sum(part.iops for part in parts),
        "bw_bytes_per_s": sum(part.bw_bytes_per_s for part in parts),
        "clat_us": clat,
    }


def make_summary(
    *,
    tool: str,
    tool_version: str | None,
    read: dict[str, Any] | None,
    write: dict[str, Any] | None,
    total: dict[str, float] | None = None,
    processes: int | None = None,
    block_size_bytes: int | None = None,
    read_percent: float | None = None,
    direct: bool | None = None,
    runtime_s: float | None = None,
    samples: list[dict[str, float | None]] | None = None,
) -> dict[str, Any]:
    """The canonical summary (DESIGN.md), keys in the documented order. total defaults to read + write."""
    if total is None:
        directions = [d for d in (read, write) if d]
        total = {
            "iops": float(sum(d["iops"] for d in directions)),
            "bw_bytes_per_s": float(sum(d["bw_bytes_per_s"] for d in directions)),
        }
    return {
        "tool": tool,
        "tool_version": tool_version,
        "total": total,
        "read": read,
        "write": write,
        "processes": processes,
        "block_size_bytes": block_size_bytes,
        "read_percent": None if read_percent is None else float(read_percent),
        "direct": direct,
        "runtime_s": runtime_s,
        "samples": samples or [],
    }


def same_or_none(values: list[Any]) -> Any:
    """The value every job agrees on, or None when they differ or there are none."""
    distinct = set(values)
    return distinct.pop() if len(distinct) == 1 else None


def excerpt(text: str, limit: int = 80) -> str:
    """A short, single-line quote of text for an error message."""
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 3] + "...")
