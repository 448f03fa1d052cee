"""Limits as a person checks them against the vendor's page (pure): numbers with thousands separators, rates
in the unit the source publishes (no MB/MiB conversion), burst durations, and each record's formula in words.
"""

from __future__ import annotations

from jobs.limits.catalog import THROUGHPUT_UNITS, _Bound, _Burst, _Formula, _Record

# The other family's unit, for the converted value printed small beside the published one.
CONVERTED = {"MB/s": "MiB/s", "MiB/s": "MB/s", "KB/s": "KiB/s", "KiB/s": "KB/s", "GB/s": "MiB/s", "B/s": "MiB/s"}

# What the catalog's named functions compute, in the source's words and unit.
FUNCTION_TEXT = {
    "gp2_throughput": "128 MiB/s up to 170 GiB; min(0.25 × IOPS, 250) MiB/s from 170 to 334 GiB "
    "(256 KiB per baseline I/O); 250 MiB/s from 334 GiB",
    "gp2_burst_throughput": "128 MiB/s up to 170 GiB, 250 MiB/s above",
    "io1_throughput": "min(0.25 × IOPS, 500) MiB/s up to 32,000 IOPS (256 KiB per I/O); IOPS ÷ 64 MiB/s above "
    "(16 KiB per I/O)",
}


def number(value: float | None, digits: int = 3) -> str:
    """1,120 or 133.5: every digit the figure has, up to `digits` decimals, never an exponent."""
    if value is None:
        return "—"
    rounded = round(float(value), digits)
    if rounded.is_integer():
        return f"{int(rounded):,}"
    return f"{rounded:,.{digits}f}".rstrip("0").rstrip(".")


def rate_value(bytes_per_s: float, unit: str) -> float:
    """Bytes per second in `unit`, to the thousandth (the precision vendors publish)."""
    value = round(float(bytes_per_s) / THROUGHPUT_UNITS[unit], 3)
    return int(value) if value.is_integer() else value


def rate_text(bytes_per_s: float | None, unit: str | None) -> str:
    """'1,120 MB/s' for 1.12e9 bytes/s in MB/s: the number as the source prints it."""
    if bytes_per_s is None:
        return "—"
    return f"{number(rate_value(bytes_per_s, unit or 'MB/s'))} {unit or 'MB/s'}"


def converted_text(bytes_per_s: float | None, unit: str | None) -> str:
    """'≈ 1,068.1 MiB/s' beside 1,120 MB/s: the same rate in the other family of units, to a tenth."""
    other = CONVERTED.get(unit or "MB/s")
    if bytes_per_s is None or other is None:
        return ""
    return f"≈ {number(float(bytes_per_s) / THROUGHPUT_UNITS[other], 1)} {other}"


def rate(bytes_per_s: float | None, unit: str | None) -> dict[str, object] | None:
    """A throughput for the API: bytes/s as stored, and the value and unit as the source publishes them."""
    if bytes_per_s is None:
        return None
    unit = unit or "MB/s"
    return {
        "bytes_per_s": bytes_per_s,
        "value": rate_value(bytes_per_s, unit),
        "unit": unit,
        "text": rate_text(bytes_per_s, unit),
    }


def duration_text(seconds: float, *, exact: bool = False) -> str:
    """1862 -> '≈ 31 min', 60 -> '60 s', 4993 -> '≈ 83 min', 20000 -> '≈ 5.6 h'; `exact` for a published time."""
    about = "" if exact else "≈ "
    if seconds < 120:
        return f"{number(seconds, 0)} s"
    if seconds < 2 * 3600:
        return f"{about}{number(seconds / 60, 0)} min"
    return f"{about}{number(seconds / 3600, 1)} h"


def block_text(size: float) -> str:
    """A block size for people: 4 KiB, 1 MiB, 27.3 KiB (1024-based, as fio reads them)."""
    for factor, unit in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if size >= factor:
            return f"{number(size / factor, 1)} {unit}"
    return f"{number(size, 0)} B"


# ----------------------------------------------------------------------------- a record's formula in words


def _expression(formula: _Formula) -> str:
    if formula.function is not None:
        return FUNCTION_TEXT.get(formula.function, formula.function)
    terms = []
    if formula.base or not (formula.per_size or formula.per_iops):
        terms.append(number(formula.base))
    if formula.per_size:
        terms.append(f"{number(formula.per_size, 9)} × size")
    if formula.per_iops:
        terms.append(f"{number(formula.per_iops, 9)} × IOPS")
    text = " + ".join(terms)
    if formula.floor is not None:
        text = f"max({text}, {number(formula.floor)})"
    if formula.cap is not None:
        text = f"min({text}, {number(formula.cap)})"
    return text


def _formula_text(formula: _Formula) -> str:
    if formula.function is not None or formula.unit is None:
        return _expression(formula)
    return f"{_expression(formula)} {formula.unit}"


def _bound_text(label: str, bound: _Bound, size_unit: str | None) -> str:
    unit = "bytes/s" if bound.unit == "B/s" else bound.unit or "IOPS"
    high = f" to {number(bound.max)}" if bound.max is not None else " or more"
    parts = [f"{label}: provisioned, {number(bound.min)}{high} {unit}"]
    if bound.max_per_size is not None:
        parts.append(f"at most {number(bound.max_per_size)} × size in {size_unit}")
    if bound.max_per_iops is not None:
        parts.append(f"at most {number(bound.max_per_iops, 9)} × provisioned IOPS")
    if bound.max_total_per_size is not None:
        parts.append(f"baseline + provisioned at most {number(bound.max_total_per_size)} × size")
    if bound.at_least_base:
        parts.append("not below the sustained value")
    if bound.default is not None:
        parts.append(f"{number(bound.default)} when not set")
    if bound.required:
        parts.append("required")
    return ", ".join(parts)


def _burst_text(burst: _Burst, size_unit: str | None) -> str:
    figures = []
    if burst.iops is not None:
        figures.append(f"{_formula_text(burst.iops)} IOPS")
    if burst.throughput is not None:
        figures.append(f"throughput {_formula_text(burst.throughput)}")
    what = f"burst to {'; '.join(figures)}" if figures else "burst to the typed burst values"
    if burst.kind == "on_demand":
        return f"{what}, on demand (no time limit, billed per use)"
    if burst.bucket_metric == "iops" and burst.bucket_size:
        return f"{what}; from a credit bucket of {number(burst.bucket_size)} I/Os refilled at the baseline rate"
    if burst.bucket_metric == "throughput" and burst.bucket_size:
        return (
            f"{what}; from a credit bucket of {block_text(burst.bucket_size)} per {size_unit} of size, "
            "refilled at the baseline rate"
        )
    if burst.seconds is not None:
        return f"{what} ({burst.kind}), for up to {duration_text(burst.seconds, exact=True)}"
    return f"{what} ({burst.kind})"


def formula_lines(record: _Record) -> list[str]:
    """How a record computes one volume's limits, in the source's units: what the disk-types page lists."""
    size_unit = record.size_unit
    lines = []
    if record.tiers:
        unit = record.tier_unit or "MB/s"
        rows = "; ".join(
            f"{tier.name} up to {number(tier.max_size)} {size_unit}: {number(tier.iops)} IOPS, "
            f"{number(tier.throughput)} {unit}"
            for tier in record.tiers
        )
        lines.append(f"By size tier, the size rounded up to the next tier: {rows}")
        bursts: dict[str, list[str]] = {}
        for tier in record.tiers:
            if tier.burst is not None:
                bursts.setdefault(_burst_text(tier.burst, size_unit), []).append(tier.name)
        for text, names in bursts.items():
            lines.append(f"{names[0]}–{names[-1]}: {text}" if len(names) > 1 else f"{names[0]}: {text}")
        return lines
    bounds = record.provisioned.bounds if record.provisioned else {}
    adding = record.provisioned is not None and record.provisioned.mode == "add"
    if record.iops is not None:
        lines.append(f"IOPS = {_formula_text(record.iops)}" + (" + provisioned IOPS" if adding else ""))
    if record.write_iops is not None:
        lines.append(f"write IOPS = {_formula_text(record.write_iops)}")
    if record.throughput is not None:
        extra = ""
        if adding and record.provisioned and record.provisioned.adds_throughput:
            extra = f" + {_formula_text(record.provisioned.adds_throughput)} for the provisioned IOPS"
        lines.append(f"throughput = {_formula_text(record.throughput)}{extra}")
    labels = {"iops": "IOPS", "bytes_per_s": "throughput", "burst_iops": "burst IOPS"}
    labels["burst_bytes_per_s"] = "burst throughput"
    for name, bound in bounds.items():
        lines.append(_bound_text(labels[name], bound, size_unit))
    if not record.iops and "iops" not in bounds:
        lines.append("IOPS: not published")
    if record.throughput is None and "bytes_per_s" not in bounds:
        lines.append("throughput: not published")
    if record.burst is not None:
        lines.append(_burst_text(record.burst, size_unit))
    if size_unit:
        lines.append(f"size in {size_unit}; per volume, × stripes, then capped by the instance")
    return lines
