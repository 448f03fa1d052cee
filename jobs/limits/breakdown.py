"""How a disk's limits come about, step by step, in the source's units (pure): one volume, × stripes, the
instance caps, which cap binds at which block size, the burst and how long it lasts, the formula and its
source. The disk page and the API (`limits.breakdown`) show the same dictionary.
"""

from __future__ import annotations

from typing import Any

from jobs.limits.catalog import _catalog
from jobs.limits.evaluation import Limits
from jobs.limits.formulas import block_text, converted_text, duration_text, formula_lines, number, rate, rate_text

# The block sizes the table of bindings shows: fio's usual 4k random to 1M sequential.
BLOCK_SIZES = (4096, 16384, 65536, 262144, 1048576)

BURST_KINDS = {
    "credit": "on credits",
    "on_demand": "on demand (no time limit, billed per use)",
    "qos": "QoS burst credit",
    "custom": "as typed",
}


def _iops(value: float | None) -> str:
    return f"{number(value)} IOPS" if value is not None else "—"


def _pair(iops: float | None, bytes_per_s: float | None, unit: str) -> str:
    parts = [_iops(iops) if iops is not None else "IOPS not published"]
    parts.append(rate_text(bytes_per_s, unit) if bytes_per_s is not None else "throughput not published")
    return " · ".join(parts)


def _times(value: float | None, stripes: int) -> float | None:
    return None if value is None else round(value * stripes, 3)


def _caps_burst(found: Limits) -> bool:
    """The instance cap holds the burst below what the striped volumes would burst to."""
    pairs = [
        (found.burst_iops, found.volume_burst_iops),
        (found.burst_throughput_bytes_per_s, found.volume_burst_throughput_bytes_per_s),
    ]
    return any(total is not None and one is not None and total < one * found.stripes for total, one in pairs)


def crossover_text(iops: float | None, bytes_per_s: float | None, unit: str) -> str:
    """Which cap binds at which block size: IOPS below throughput ÷ IOPS, throughput above."""
    if iops and bytes_per_s:
        at = bytes_per_s / iops
        return (
            f"IOPS-bound below {block_text(at)} blocks, throughput-bound above "
            f"({rate_text(bytes_per_s, unit)} ÷ {_iops(iops)})"
        )
    if iops:
        return "IOPS-bound at every block size (no throughput limit)"
    if bytes_per_s:
        return "throughput-bound at every block size (no IOPS limit)"
    return ""


def _at(iops: float | None, bytes_per_s: float | None, block_size: int, unit: str) -> dict[str, Any]:
    by_throughput = bytes_per_s / block_size if bytes_per_s else None
    binding: str | None = None
    reach: float | None = None
    if by_throughput is not None and (iops is None or by_throughput < iops):
        binding, reach = "throughput", by_throughput
    elif iops is not None:
        binding, reach = "iops", iops
    # The rate from the unrounded IOPS: 1,120 MB/s at 64 KiB, not 17,089.8 x 65,536 bytes.
    moved = reach * block_size if reach is not None else None
    reach = round(reach, 1) if reach is not None else None
    return {
        "block_size_bytes": block_size,
        "block_size": block_text(block_size),
        "binding": binding,
        "iops": reach,
        "throughput": rate(moved, unit),
        "text": f"{number(reach, 1)} IOPS = {rate_text(moved, unit)}" if reach is not None else "—",
    }


def _formula(found: Limits) -> list[str]:
    kind = _catalog().get(found.disk_type)
    record = next((r for r in kind.records if r.id == found.record_id), None) if kind else None
    return formula_lines(record) if record else []


def breakdown(found: Limits) -> dict[str, Any]:
    """The steps from one volume to the disk's limits, JSON-ready, with a `rows` list a page prints as is."""
    unit, total_unit, stripes = found.throughput_unit, found.total_throughput_unit, found.stripes
    cap_unit = found.instance_throughput_unit or total_unit
    rows = [
        {
            "label": "Per disk",
            "value": _pair(found.volume_iops, found.volume_throughput_bytes_per_s, unit)
            + (f" ({found.tier})" if found.tier else ""),
            "note": converted_text(found.volume_throughput_bytes_per_s, unit),
        }
    ]
    if stripes > 1:
        striped_bytes = _times(found.volume_throughput_bytes_per_s, stripes)
        rows.append(
            {
                "label": f"× {stripes} stripes",
                "value": _pair(_times(found.volume_iops, stripes), striped_bytes, unit),
                "note": converted_text(striped_bytes, unit),
            }
        )
    if found.instance_iops_cap is not None or found.instance_throughput_bytes_per_s_cap is not None:
        caps = []
        if found.instance_iops_cap is not None:
            caps.append(_iops(found.instance_iops_cap))
        if found.instance_throughput_bytes_per_s_cap is not None:
            caps.append(rate_text(found.instance_throughput_bytes_per_s_cap, cap_unit))
        binds = f"binds: {' and '.join(found.capped_by_instance)}" if found.capped_by_instance else "does not bind"
        if _caps_burst(found):
            binds += "; caps the burst" if found.capped_by_instance else " the baseline; caps the burst"
        rows.append({"label": "Instance cap", "value": " · ".join(caps), "note": binds})
    rows.append(
        {
            "label": "Limit",
            "value": _pair(found.iops, found.throughput_bytes_per_s, total_unit),
            "note": converted_text(found.throughput_bytes_per_s, total_unit),
        }
    )
    binding = crossover_text(found.iops, found.throughput_bytes_per_s, total_unit)
    if binding:
        rows.append({"label": "Binding cap", "value": binding, "note": ""})

    burst: dict[str, Any] | None = None
    if found.burst_iops is not None or found.burst_throughput_bytes_per_s is not None:
        lasts = ""
        if found.burst_seconds is not None:
            lasts = f"{duration_text(found.burst_seconds)} from a full bucket"
            if found.burst_kind == "qos":
                lasts = f"up to {duration_text(found.burst_seconds, exact=True)} of credit"
            if _caps_burst(found) and found.burst_kind == "credit":
                lasts += " at the disks' own burst rate; longer under the instance cap"
        elif found.burst_kind == "on_demand":
            lasts = "no time limit (billed per use)"
        burst_iops = found.burst_iops if found.burst_iops is not None else found.iops
        burst_bytes = found.burst_throughput_bytes_per_s
        if burst_bytes is None:
            burst_bytes = found.throughput_bytes_per_s
        burst = {
            "kind": found.burst_kind,
            "iops": found.burst_iops,
            "throughput": rate(found.burst_throughput_bytes_per_s, total_unit),
            "seconds": found.burst_seconds,
            "lasts": lasts,
            "binding": crossover_text(burst_iops, burst_bytes, total_unit),
        }
        value = _pair(found.burst_iops, found.burst_throughput_bytes_per_s, total_unit)
        if found.burst_iops is None:
            value = rate_text(found.burst_throughput_bytes_per_s, total_unit)
        elif found.burst_throughput_bytes_per_s is None:
            value = _iops(found.burst_iops)
        kind = BURST_KINDS.get(found.burst_kind or "", found.burst_kind or "")
        rows.append({"label": "Burst", "value": f"{value}, {kind}", "note": lasts})
        bursting = crossover_text(burst_iops, burst_bytes, total_unit)
        if bursting:
            rows.append({"label": "While bursting", "value": bursting, "note": ""})

    at_sizes = [_at(found.iops, found.throughput_bytes_per_s, size, total_unit) for size in BLOCK_SIZES]
    source = dict(found.source)
    return {
        "per_disk": {
            "iops": found.volume_iops,
            "throughput": rate(found.volume_throughput_bytes_per_s, unit),
            "burst_iops": found.volume_burst_iops,
            "burst_throughput": rate(found.volume_burst_throughput_bytes_per_s, unit),
        },
        "stripes": stripes,
        "striped": {
            "iops": _times(found.volume_iops, stripes),
            "throughput": rate(_times(found.volume_throughput_bytes_per_s, stripes), unit),
        },
        "instance_cap": {
            "iops": found.instance_iops_cap,
            "throughput": rate(found.instance_throughput_bytes_per_s_cap, cap_unit),
            "binds": list(found.capped_by_instance),
        },
        "total": {"iops": found.iops, "throughput": rate(found.throughput_bytes_per_s, total_unit)},
        "binding": binding,
        "at_block_sizes": at_sizes,
        "burst": burst,
        "formula": _formula(found),
        "source": source,
        "rows": rows,
    }
