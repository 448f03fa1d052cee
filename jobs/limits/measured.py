"""A measured throughput beside a limit (pure): benchweb's figure first, as the pages show it, then the same
rate in the unit the limit is published in ("176 MiB/s = 184.5 MB/s" beside "4,000 MB/s"), and its efficiency
against the throughput limit beside the IOPS one. Every page, tooltip and note that puts a measured rate
beside a limit goes through here, so they say it alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobs.limits.catalog import THROUGHPUT_UNITS
from jobs.limits.efficiency import Efficiency, percent_text
from jobs.limits.formulas import number, rate_text


def limit_unit(snapshot: Mapping[str, Any] | None) -> str | None:
    """The unit a run's limits (Limits.as_dict) give their throughput in, or None without limits."""
    if not snapshot or snapshot.get("error"):
        return None
    unit = snapshot.get("total_throughput_unit") or snapshot.get("throughput_unit")
    return unit if unit in THROUGHPUT_UNITS else None


def in_unit(bytes_per_s: float, unit: str) -> str:
    """A measured rate in a limit's unit, to a tenth: 184549376 in MB/s -> "184.5 MB/s"."""
    return f"{number(float(bytes_per_s) / THROUGHPUT_UNITS[unit], 1)} {unit}"


def beside(shown: str, bytes_per_s: float | None, unit: str | None) -> str:
    """`shown` (benchweb's figure: "176 MiB/s") and, when the limit is in another unit, "= 184.5 MB/s" after
    it; `shown` alone without a limit unit or where it already reads in that unit."""
    if bytes_per_s is None or unit not in THROUGHPUT_UNITS or shown.endswith(f" {unit}"):
        return shown
    assert unit is not None  # checked above
    return f"{shown} = {in_unit(bytes_per_s, unit)}"


def promised_throughput(snapshot: Mapping[str, Any] | None, *, burst: bool = False) -> float | None:
    """The throughput limit of a run's limits (while bursting, with burst=True); None without one."""
    if not snapshot or snapshot.get("error"):
        return None
    value = snapshot.get("burst_throughput_bytes_per_s" if burst else "throughput_bytes_per_s")
    return float(value) if isinstance(value, int | float) and value > 0 else None


def throughput_efficiency(bytes_per_s: float | None, snapshot: Mapping[str, Any] | None) -> Efficiency | None:
    """Measured throughput ÷ the throughput limit (and the burst limit where the type bursts); None without."""
    return Efficiency.of(bytes_per_s, promised_throughput(snapshot), promised_throughput(snapshot, burst=True))


def throughput_efficiency_text(found: Efficiency, snapshot: Mapping[str, Any] | None) -> str:
    """The throughput efficiency with the limits it is against, in their published unit: "4.6 % of 4,000 MB/s",
    or "51 % of baseline 128 MiB/s, 26 % of burst 250 MiB/s"."""
    unit = limit_unit(snapshot) or "MB/s"
    baseline, burst = promised_throughput(snapshot), promised_throughput(snapshot, burst=True)
    base = f"{percent_text(found.of_baseline)} of"
    if found.of_burst is None or burst is None:
        return f"{base} {rate_text(baseline, unit)}"
    return (
        f"{base} baseline {rate_text(baseline, unit)}, {percent_text(found.of_burst)} of burst {rate_text(burst, unit)}"
    )
