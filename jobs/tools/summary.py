"""The canonical result summary every parser returns, and the arithmetic the parsers share (pure: no Django).

Units are settled here so no caller has to ask: bytes per second and microseconds. A value the tool did not
report is None, never an estimate. Every number in a summary is finite and not negative: a measured value
that is negative, or a result that overflows to infinity, is a ParseError saying where, since no run reports
one; a setting the tool would have refused (numjobs=-2, rwmixread=150) leaves its field None. Every number is
also within what a disk can do (bounds.py), checked when a ParseResult is made, so what a parser returns can
always be stored.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from jobs.tools import bounds

# The percentiles a summary carries: (key, percent).
PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p95", 95.0), ("p99", 99.0), ("p99_9", 99.9))
# A number as the tools print it. ASCII only: float() also takes '١٢' and '1_000', which no tool prints.
_NUMBER = re.compile(r"\s*[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\s*")
# fio's widest integers are unsigned 64-bit; a longer run of digits is not a number a tool printed.
MAX_DIGITS = 20


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
    # Which part of the output this is (detect.parse_all): "" for the only result, else "group 1 (randwrite)",
    # "client 10.0.0.5", "All clients", ...
    label: str = ""
    # Non-empty when the output was an excerpt (a lone summary line): what it does not say.
    partial: str = ""
    # fio JSON with `ss` only: each entry's steady-state verdict as fio printed it (fio_steady.steadystate).
    steadystate: list[dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        # Every parser returns one of these, so this is the one gate between a tool's numbers and the database.
        problem = bounds.summary_problem(self.summary) or bounds.bins_problem(self.latency_bins)
        if problem:
            raise ParseError(problem)

    @property
    def failed(self) -> bool:
        return bool(self.job_errors)

    def summary_with_bins(self) -> dict[str, Any]:
        """The summary as a run stores it: json+ completion-latency bins included (the run page's histogram)."""
        if not self.latency_bins:
            return self.summary
        bins = {direction: {str(ns): n for ns, n in b.items()} for direction, b in self.latency_bins.items()}
        return self.summary | {"latency_bins_ns": bins}


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
    """A float, or None for what is missing, not a number, or infinite (fio can print nan and inf).

    An integer beyond float range (a JSON 10**309) counts as infinite.
    """
    if value is None or isinstance(value, bool) or (isinstance(value, str) and not _NUMBER.fullmatch(value)):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def amount(value: Any, where: str) -> float | None:
    """A count, size, time, rate or latency as finite() reads it; ParseError when it is negative, as no tool
    prints a negative one, so the output was cut or edited."""
    number = finite(value)
    if number is not None and number < 0:
        raise ParseError(f"{where} is {number:g}; expected a number that is not negative.")
    return number


def real(token: str, where: str) -> float:
    """A number the parser's pattern matched in text ([0-9] and '.'); ParseError when it overflows to inf."""
    number = float(token)
    if not math.isfinite(number):
        raise ParseError(f"{where}: {excerpt(token, 30)} is too large to be a number the tool printed.")
    return number


def whole(token: str, where: str) -> int:
    """A run of ASCII digits the parser's pattern matched, as an int; ParseError past MAX_DIGITS digits (int()
    would refuse more than 4300 anyway)."""
    if len(token) > MAX_DIGITS:
        raise ParseError(
            f"{where}: {excerpt(token, 30)} has {len(token)} digits; no tool prints more than {MAX_DIGITS}."
        )
    return int(token)


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
    printed: dict[str, Any] | None = None,
    workload: dict[str, Any] | None = None,
    cpu: dict[str, Any] | None = None,
    disk_util: list[dict[str, Any]] | None = None,
    ios: float | None = None,
) -> dict[str, Any]:
    """The canonical summary (docs/architecture.md), keys in the documented order. total defaults to read + write.

    printed holds the tool's own figures as it printed them ({"read": {"iops": "1506", "bw": "5.88MiB/s", ...},
    "write": ..., "total": ..., "cpu": ..., "disk_util": [...]}), workload what the output says the job was
    (make_workload); both default to "nothing printed". cpu and disk_util are fio's own view
    (fio_own_view.py); ios, the I/Os the result completed, gives cpu_us_per_io."""
    if total is None:
        directions = [d for d in (read, write) if d]
        total = {
            "iops": float(sum(d["iops"] for d in directions)),
            "bw_bytes_per_s": float(sum(d["bw_bytes_per_s"] for d in directions)),
        }
    summary: dict[str, Any] = {
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
        "printed": {
            **{direction: (printed or {}).get(direction) for direction in PRINTED_DIRECTIONS},
            "cpu": (printed or {}).get("cpu"),
            "disk_util": (printed or {}).get("disk_util") or [],
        },
        "workload": workload or make_workload(),
        "cpu": cpu,
        "cpu_us_per_io": cpu_us_per_io(cpu, ios, runtime_s=runtime_s, processes=processes),
        "disk_util": disk_util or [],
    }
    _check_plausible(summary, "summary")
    if summary["read_percent"] is not None and summary["read_percent"] > 100:
        raise _implausible("read_percent", summary["read_percent"], "no run reads more than 100%")
    return summary


PRINTED_DIRECTIONS = ("read", "write", "total")


def cpu_us_per_io(
    cpu: dict[str, Any] | None, ios: float | None, *, runtime_s: float | None, processes: int | None
) -> float | None:
    """µs of fio's CPU (user + system) per completed I/O:

        (usr_percent + sys_percent) / 100 × clock_ms × 1000 / ios

    fio prints usr_cpu = usr_time × 100 / total_run_time, usr_time being the job's user CPU from getrusage and
    total_run_time the ms since the job started (stat.c show_thread_status_normal and _json, backend.c
    thread_main); with group_reporting, sum_thread_stats adds up usr_time, sys_time and total_run_time over the
    members, so the percentages are a share of one CPU averaged over them and share × the summed clock is
    their CPU time. The clock is JSON's job_runtime (fio 3.8+ prints total_run_time under that name, summed
    like the CPU times); where fio did not print it (the text report, terse, older JSON) it is runtime_s ×
    processes, the I/O runtime of every member: fio's clock also counts a job's time outside I/O, so there the
    figure can read a little low. None when any input is missing or there was no I/O.
    """
    if not cpu or cpu.get("usr_percent") is None or cpu.get("sys_percent") is None or not ios:
        return None
    clock_ms = cpu.get("job_runtime_ms")
    if clock_ms is None and runtime_s is not None and processes:
        clock_ms = runtime_s * 1000 * processes
    if not clock_ms:
        return None
    return float((cpu["usr_percent"] + cpu["sys_percent"]) / 100 * clock_ms * 1000 / ios)


WORKLOAD_KEYS = ("rw", "block_size", "iodepth", "numjobs", "read_percent", "ioengine")


def make_workload(
    *,
    rw: str | None = None,
    block_size: str | None = None,
    iodepth: int | None = None,
    numjobs: int | None = None,
    read_percent: float | None = None,
    ioengine: str | None = None,
) -> dict[str, Any]:
    """summary["workload"]: what the output says the job was (job options, command line, ndisk64 header), never
    guessed. block_size is as printed ("4k", "4096B"); a key the output does not give is None."""
    return {
        "rw": rw,
        "block_size": block_size,
        "iodepth": iodepth,
        "numjobs": numjobs,
        "read_percent": None if read_percent is None else float(read_percent),
        "ioengine": ioengine,
    }


def printed_figures(**figures: str | None) -> dict[str, str] | None:
    """One direction of summary["printed"]: the figures given (iops, bw, bw_alt, runtime), None when none were."""
    kept = {key: value for key, value in figures.items() if value}
    return kept or None


def _check_plausible(value: Any, where: str) -> None:
    """Every number in a summary is finite and not negative; finite inputs can still overflow (1e306 KiB in 1 ms)."""
    if isinstance(value, dict):
        for key, item in value.items():
            _check_plausible(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_plausible(item, f"{where}[{index}]")
    elif isinstance(value, bool) or not isinstance(value, int | float):
        return
    elif value < 0 or (isinstance(value, float) and not math.isfinite(value)):
        raise _implausible(
            where.removeprefix("summary."), value, "no run reports a negative, infinite or undefined one"
        )


def _implausible(what: str, value: float, why: str) -> ParseError:
    return ParseError(f"implausible value {value!r} for {what}: {why}. Check that the output is complete and unedited.")


def same_or_none(values: list[Any]) -> Any:
    """The value every job agrees on, or None when they differ or there are none."""
    distinct = set(values)
    return distinct.pop() if len(distinct) == 1 else None


def excerpt(text: str, limit: int = 80) -> str:
    """A short, single-line quote of text for an error message."""
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 3] + "...")
