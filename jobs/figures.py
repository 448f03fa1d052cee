"""A result's figures as the tool printed them, for the places a result is shown first (pure: no Django).

A storage engineer checks these digit by digit against the tool's output, so a figure the tool printed is
shown with its own digits, precision and unit ("20,030.0 IO/s", "80,119.94 KB/s", "1,506 IOPS"): only
thousands separators are added, and only where the tool printed none. The value converted to benchweb's
units stands beside it when the units differ ("= 78.24 MiB/s"). A run stored before summaries kept the
printed figures shows its stored numbers in full instead (1,506 IOPS, never "1.51k"). Compact forms belong
to dense tables and chart axes (jobs/units.py).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

DIRECTIONS = ("read", "write", "total")
TIMES = "\N{MULTIPLICATION SIGN}"
# A figure as printed: a leading number (possibly already grouped, possibly fio's 23.4k) and the rest.
_LEADING = re.compile(r"^(\s*)([0-9][0-9,]*)(\.[0-9]*)?(.*)$", re.DOTALL)
_BINARY_RATES = ((2**40, "TiB/s"), (2**30, "GiB/s"), (2**20, "MiB/s"), (2**10, "KiB/s"))


def grouped(token: str) -> str:
    """The printed token with thousands separators in its leading whole number, when it has none:
    "20030.0 IO/s" -> "20,030.0 IO/s", "6169kB/s" -> "6,169kB/s"; anything else is returned as it is."""
    match = _LEADING.match(token)
    if not match or "," in match.group(2):
        return token
    space, whole, fraction, rest = match.groups()
    return f"{space}{int(whole):,}{fraction or ''}{rest}"


def exact_number(value: float) -> str:
    """A stored number in full, grouped: 1506.0 -> "1,506", 1506.502 -> "1,506.502" (Python's shortest repr,
    which gives back the stored float exactly)."""
    return f"{int(value):,}" if float(value).is_integer() else format(value, ",")


def converted_rate(bytes_per_s: float | None) -> str:
    """A bandwidth in binary units with two decimals: 82042818.56 -> "78.24 MiB/s"."""
    if bytes_per_s is None:
        return ""
    for factor, unit in _BINARY_RATES:
        if bytes_per_s >= factor:
            return f"{bytes_per_s / factor:,.2f} {unit}"
    return f"{bytes_per_s:,.0f} B/s"


def _unit_of(token: str) -> str:
    match = _LEADING.match(token)
    return match.group(4).strip() if match else ""


def _iops_text(token: str) -> str:
    # fio text prints "IOPS=1506" or "IOPS=23.4k", its JSON a bare number: the figure alone, which is IOPS.
    text = grouped(token.strip())
    return f"{text} IOPS" if _unit_of(token) in ("", "k", "M") else text


def direction_figures(direction: str, stored: dict[str, Any] | None, printed: dict[str, Any] | None) -> dict[str, Any]:
    """One row: iops and bw as shown first, bw_alt (fio's second unit), converted (beside bw), and `source`:
    "printed" (the tool's figures), "stored" (no printed figures were kept) or "sum" (a total the tool did not
    print: read + write as stored)."""
    stored, printed = stored or {}, printed or {}
    iops, bw = stored.get("iops"), stored.get("bw_bytes_per_s")
    converted = converted_rate(bw)
    row: dict[str, Any] = {"direction": direction, "source": "printed" if printed else "stored", "bw_alt": ""}
    row["iops"] = _iops_text(printed["iops"]) if printed.get("iops") else _stored_iops(iops)
    # fio shortens IOPS from 10,000 on ("13.5k"): the stored figure (its I/O count over its runtime) goes beside.
    rounded = printed.get("iops") and _unit_of(printed["iops"]) in ("k", "M") and iops is not None
    row["iops_exact"] = f"{iops:,.1f} IOPS" if rounded else ""
    if printed.get("bw"):
        row["bw"] = grouped(printed["bw"].strip())
        row["bw_alt"] = grouped(printed.get("bw_alt", "").strip())
        # Beside the printed figure only when it is in other units than benchweb's.
        row["converted"] = "" if _unit_of(printed["bw"]) == converted.split(" ")[-1] else converted
    else:
        row["bw"], row["converted"] = converted or "—", ""
    row["runtime"] = grouped(printed.get("runtime", "").strip())
    return row


def _stored_iops(iops: float | None) -> str:
    return "—" if iops is None else f"{exact_number(iops)} IOPS"


def result_figures(summary: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The rows a result is shown with first: read and write (those it has) and their total; a one-direction
    result without a printed total is that direction alone (its total would repeat it)."""
    summary = summary or {}
    printed = summary.get("printed") or {}
    rows = []
    for direction in DIRECTIONS:
        stored = summary.get(direction)
        if not stored:
            continue
        shown = printed.get(direction)
        measured = [d for d in ("read", "write") if summary.get(d)]
        if direction == "total" and not shown and len(measured) == 1:
            continue
        row = direction_figures(direction, stored, shown)
        if direction == "total" and not printed.get("total") and summary.get("read") and summary.get("write"):
            row |= _summed(summary, printed)
        rows.append(row)
    return rows


def _summed(summary: dict[str, Any], printed: dict[str, Any]) -> dict[str, Any]:
    """A total the tool did not print: read + write summed in decimal from the printed figures when both are
    plain numbers in one unit (19448.517161 + 8307.564145 = "27,756.081306 IOPS"); else the stored sum to
    three significant digits, as precise as a figure like fio's "17.0k" allows; without printed figures (an
    older run), the stored sum in full."""
    both = [printed.get(direction) or {} for direction in ("read", "write")]
    iops = _decimal_sum([figure.get("iops", "") for figure in both])
    bw = _decimal_sum([figure.get("bw", "") for figure in both])
    stored = summary.get("total") or {}
    converted = converted_rate(stored.get("bw_bytes_per_s"))
    return {
        "source": "sum",
        "iops": (iops if _unit_of(iops) else f"{iops} IOPS")
        if iops
        else _three_digits(stored.get("iops"))
        if any(both)
        else _stored_iops(stored.get("iops")),
        "bw": bw or converted or "—",
        "bw_alt": "",
        "converted": converted if bw and _unit_of(bw) != converted.split(" ")[-1] else "",
    }


def _three_digits(iops: float | None) -> str:
    """IOPS to three significant digits, fio's way: 24295.0 -> "24.3k IOPS"."""
    if iops is None:
        return "—"
    for factor, suffix in ((1e6, "M"), (1e3, "k")):
        if iops >= factor:
            return f"{iops / factor:.3g}{suffix} IOPS"
    return f"{iops:.3g} IOPS"


def _decimal_sum(tokens: list[str]) -> str:
    """The sum of printed figures that are plain numbers in one unit, with the finest precision of them; ""."""
    matches = [_LEADING.match(token.strip()) for token in tokens]
    if not all(matches) or len({m.group(4).strip() for m in matches if m}) != 1:
        return ""
    numbers = [m for m in matches if m]
    if any("," in m.group(2) or m.group(4).strip() in ("k", "M") for m in numbers):
        return ""
    places = max(len(m.group(3) or ".") - 1 for m in numbers)
    total = sum(Decimal(m.group(2) + (m.group(3) or "")) for m in numbers)
    unit = numbers[0].group(4)
    return f"{total:,.{places}f}{unit}"


def total_iops_shown(summary: dict[str, Any] | None) -> str | None:
    """The total IOPS as result_figures shows it first ("20,030.0 IO/s"), or None without a result."""
    rows = result_figures(summary)
    return rows[-1]["iops"] if rows else None


def printed_runtime(summary: dict[str, Any] | None) -> str:
    """The runtime as the tool printed it (fio: per direction, the first one), or ""."""
    printed = (summary or {}).get("printed") or {}
    for direction in DIRECTIONS:
        runtime = (printed.get(direction) or {}).get("runtime")
        if runtime:
            return grouped(str(runtime).strip())
    return ""


def workload_facts(summary: dict[str, Any] | None) -> list[tuple[str, str]]:
    """(label, value) pairs of the workload the output states; empty when the summary has none (older runs)."""
    workload = (summary or {}).get("workload") or {}
    if not any(value is not None for value in workload.values()):
        return []
    read_percent = workload.get("read_percent")
    values = [
        ("rw", workload.get("rw")),
        ("Block size", workload.get("block_size")),
        ("iodepth", workload.get("iodepth")),
        ("Jobs", workload.get("numjobs")),
        ("Read %", None if read_percent is None else f"{read_percent:g} %"),
        ("I/O engine", workload.get("ioengine")),
    ]
    return [(label, "not in the output" if value is None else str(value)) for label, value in values]


def workload_name(workload: dict[str, Any] | None, block_size_bytes: int | None = None) -> str:
    """An import's name from the workload its output states: rw, the read/write mix of a mixed rw, the block
    size, QD and, after a multiplication sign, the jobs ("randrw 70/30 4k QD32", the sign, 4); "" when it
    states none. The block size is the parsed one (4096 and "4k" both read 4k) so that a JSON and a text report
    of one job get one name; as printed when the output gives no single size."""
    workload = workload or {}
    parts = []
    rw, read_percent = workload.get("rw"), workload.get("read_percent")
    if rw:
        parts.append(str(rw))
    if read_percent is not None and (not rw or rw in MIXED) and 0 < read_percent < 100:
        parts.append(f"{read_percent:g}/{100 - read_percent:g}")
    size = compact_size(block_size_bytes) if block_size_bytes else workload.get("block_size")
    if size and parts:
        parts.append(str(size))
    if workload.get("iodepth") is not None and parts:
        parts.append(f"QD{workload['iodepth']}")
    if workload.get("numjobs") not in (None, 1) and parts:
        parts.append(f"{TIMES}{workload['numjobs']}")
    return " ".join(parts)


# fio's rw values that mix reads and writes.
MIXED = ("randrw", "rw", "readwrite", "trimwrite", "randtrimwrite")


def compact_size(size: int) -> str:
    """A block size the way fio is given one: 4096 -> "4k", 1048576 -> "1m", 512 -> "512B"."""
    for factor, suffix in ((2**30, "g"), (2**20, "m"), (2**10, "k")):
        if size % factor == 0:
            return f"{size // factor}{suffix}"
    return f"{size}B"


def fio_view(summary: dict[str, Any] | None) -> dict[str, Any] | None:
    """fio's own view of the run for its page: the cpu line as printed, the CPU µs per I/O and each disk util
    line (device, util, read/write ios as printed); None when fio printed none of them (ndisk64, an excerpt, a run
    stored before benchweb kept them)."""
    summary = summary or {}
    cpu = summary.get("cpu")
    printed = summary.get("printed") or {}
    disks = printed.get("disk_util") or []
    if not cpu and not disks:
        return None
    return {
        "cpu": _cpu_text(cpu, printed.get("cpu")),
        "cpu_printed": bool(printed.get("cpu")),
        "us_per_io": _us_per_io(summary.get("cpu_us_per_io")),
        "clock": "fio's job_runtime" if (cpu or {}).get("job_runtime_ms") is not None else "runtime × jobs",
        "disks": disks,
    }


def _cpu_text(cpu: dict[str, Any] | None, printed: dict[str, str] | None) -> str | None:
    """usr=4.83%, sys=33.10%, ctx=72885 as fio printed it; for several job entries, the figures benchweb combined
    from theirs (a share fio's clocks did not allow is left out)."""
    if printed:
        return ", ".join(f"{key}={printed[key]}" for key in ("usr", "sys", "ctx") if key in printed)
    if not cpu:
        return None
    parts = [f"{key[:3]}={cpu[key]:.2f}%" for key in ("usr_percent", "sys_percent") if cpu.get(key) is not None]
    return ", ".join([*parts, *([f"ctx={cpu['ctx']}"] if cpu.get("ctx") is not None else [])]) or None


def _us_per_io(value: float | None) -> str | None:
    """Three significant digits, never an exponent: 15.6 µs, 0.934 µs, 1,234 µs."""
    if value is None:
        return None
    return f"{value:,.0f} µs" if value >= 100 else f"{float(f'{value:.3g}'):g} µs"
