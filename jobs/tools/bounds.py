"""What a disk can physically report: every number of a summary is checked against these bounds (pure: no Django).

A parser reads any number a tool could print, but a runtime of 18446744073709551615 ms (fio's -1 as uint64), a
bandwidth of 10^22 bytes/s or a block size of 2^40 is not a measurement: the output was damaged, edited, or
printed by a broken build. Stored as it is, such a value overflows a database column or a date, so the whole
import fails with an OverflowError instead of a message. Each bound is set far beyond anything a real disk or
run does, so no honest result is ever refused, and within every column the value lands in (RunResult,
RunResultDay, RunSample: FloatField, a 32-bit PositiveIntegerField, a 64-bit PositiveBigIntegerField; the same
limits on SQLite and PostgreSQL) and within Python's dates (started_at = finished_at - runtime).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# The longest run benchweb stores: ten years. Nobody runs a benchmark for ten years; a date can go that far back.
MAX_RUNTIME_S = 10 * 366 * 86_400
# The fastest NVMe drives do about 10 million IOPS and the largest arrays a few hundred million: 1e9 is 100x past.
MAX_IOPS = 1e9
# A petabyte per second: 10,000 times today's fastest devices (PCIe 6 x16 moves about 128 GB/s). The column is a
# 64-bit integer (9.2e18), so this also keeps the rounded bandwidth inside it.
MAX_BYTES_PER_S = 1e15
# A latency cannot exceed the longest run.
MAX_LATENCY_US = MAX_RUNTIME_S * 1e6
# RunResult.block_size_bytes is a 32-bit integer; a device transfers at most a few MiB in one I/O.
MAX_BLOCK_SIZE = 2**31 - 1
# fio runs at most 4096 jobs (REAL_MAX_JOBS) and ndisk64 a few hundred processes.
MAX_PROCESSES = 1_000_000
# json+ histogram bins: a latency in ns and a count of I/Os, both within the longest run at the highest IOPS.
MAX_LATENCY_NS = MAX_LATENCY_US * 1000
MAX_IOS = MAX_IOPS * MAX_RUNTIME_S

# A summary's key -> (bound, its unit, what a larger value is beyond). Keys are matched on the last part of a
# value's path, so "total.iops", "read.iops" and "samples[3].read_iops" share the IOPS bound.
BOUNDS: dict[str, tuple[float, str, str]] = {
    "iops": (MAX_IOPS, "IOPS", "any real disk"),
    "read_iops": (MAX_IOPS, "IOPS", "any real disk"),
    "write_iops": (MAX_IOPS, "IOPS", "any real disk"),
    "bw_bytes_per_s": (MAX_BYTES_PER_S, "bytes/s, 1 PB/s", "any real disk"),
    "clat_us": (MAX_LATENCY_US, "µs, ten years", "any real run"),
    "runtime_s": (MAX_RUNTIME_S, "s, ten years", "any real run"),
    "t_s": (MAX_RUNTIME_S, "s, ten years", "any real run"),
    "block_size_bytes": (MAX_BLOCK_SIZE, "bytes", "any real block size"),
    "processes": (MAX_PROCESSES, "processes", "any real run"),
    "read_percent": (100, "%", "what a run can read"),
    # summary["workload"]: fio takes an iodepth up to 65536 and at most 4096 jobs. Its strings ("printed",
    # "rw", "block_size") are not numbers and are not checked here.
    "iodepth": (MAX_PROCESSES, "I/Os in flight", "any real queue"),
    "numjobs": (MAX_PROCESSES, "processes", "any real run"),
}

# Below these a value is no measurement at all: every I/O moves at least one byte (fio itself refuses bs=0).
MINIMUMS: dict[str, tuple[float, str, str]] = {
    "block_size_bytes": (1, "byte", "any real block size"),
}


def summary_problem(summary: dict[str, Any]) -> str | None:
    """What is wrong with the first number of a summary that is beyond what a disk or a run can do, if any.

    (A message, not an exception: summary.py owns ParseError and raises it, and it imports this module.)
    """
    for path, key, value in _numbers(summary, ""):
        bound = BOUNDS.get(key)
        if bound is not None and value > bound[0]:
            return out_of_bounds(path, value, *bound)
        least = MINIMUMS.get(key)
        if least is not None and value < least[0]:
            return (
                f"{path} = {_show(value)} is below {least[2]} (at least {_show(least[0])} {least[1]}): is the output "
                "damaged? Its numbers are not stored."
            )
    return None


def bins_problem(bins: dict[str, dict[int, int]] | None) -> str | None:
    """What is wrong with a json+ histogram bin whose latency or count is beyond any real run, if any."""
    for direction, counts in (bins or {}).items():
        for ns, count in counts.items():
            if ns > MAX_LATENCY_NS:
                return out_of_bounds(f"latency_bins_ns.{direction}", ns, MAX_LATENCY_NS, "ns", "any real run")
            if count > MAX_IOS:
                return out_of_bounds(f"latency_bins_ns.{direction}[{ns}]", count, MAX_IOS, "I/Os", "any real run")
    return None


def out_of_bounds(field: str, value: float, bound: float, unit: str, what: str) -> str:
    return (
        f"{field} = {_show(value)} is beyond {what} (at most {_show(bound)} {unit}): is the output damaged? "
        "Its numbers are not stored."
    )


def _numbers(value: Any, path: str, key: str = "") -> Iterator[tuple[str, str, float]]:
    """(path, governing key, number) for every number in value; a latency map's keys inherit "clat_us"."""
    if isinstance(value, dict):
        for name, item in value.items():
            child = f"{path}.{name}" if path else str(name)
            yield from _numbers(item, child, key if key == "clat_us" else str(name))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _numbers(item, f"{path}[{index}]", key)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield path, key, value


def _show(value: float) -> str:
    """A number as a person reads it: whole numbers in full, others to six significant digits."""
    if isinstance(value, int) or (value.is_integer() and abs(value) < 1e18):
        return str(int(value))
    return f"{value:.6g}"
