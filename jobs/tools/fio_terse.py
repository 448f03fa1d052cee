"""fio's terse lines (docs/reference/fio-output.md#terse-output), versions 2 to 5, read into the canonical summary,
one result per group (pure).

Each line is one job (or one group with group_reporting): a header, then a READ and a WRITE block (and a TRIM
block from version 4) of 41 fields each, 47 from version 5: io KiB, bw KiB/s, iops, runtime ms, slat
min/max/mean/dev, clat min/max/mean/dev (µs), 20 clat percentiles "P%=V" (µs), lat min/max/mean/dev, bw
min/max/agg%/mean/dev, and in version 5 bw samples and iops min/max/mean/dev/samples. Version 2 has no fio
version field, so its header is one field shorter.
"""

from __future__ import annotations

import re
from typing import Any

from jobs.tools import fio_own_view
from jobs.tools.fio_common import _clock_ms, _errno_messages, part_labeller, representative
from jobs.tools.summary import (
    DirectionStats,
    ParseError,
    ParseResult,
    excerpt,
    finite,
    make_summary,
    merge_direction,
    printed_figures,
    same_or_none,
)

# version -> (field of the group id, {direction: first field of its block}, fields a line has at least)
_LAYOUTS: dict[str, tuple[int, dict[str, int], int]] = {
    "2": (2, {"read": 4, "write": 45}, 86),
    "3": (3, {"read": 5, "write": 46}, 87),
    "4": (3, {"read": 5, "write": 46}, 128),
    "5": (3, {"read": 5, "write": 52}, 146),
}


# version -> where its usr%;sys%;ctx;majf;minf fields may begin. fio 3.x writes a trim block into version 2 that
# fio 2.x did not, so version 2 has two places (the fixtures of both show it).
_CPU_STARTS: dict[str, tuple[int, ...]] = {"2": (86, 127), "3": (87,), "4": (128,), "5": (146,)}
# After the cpu fields: 7 I/O depth, 10 µs and 12 ms latency buckets, then (version 3 and later) the disks.
_DISKS_AFTER_CPU = 5 + 7 + 10 + 12

_BARE_VERSION = re.compile(r"[0-9]{1,3}\.[0-9]{1,3}(?:\.[0-9]{1,3})?")


def _terse_number(fields: list[str], index: int, lineno: int) -> float:
    """Every field the parser reads is a count, size, time, rate, latency or errno: never negative."""
    value = finite(fields[index].rstrip("%"))
    if value is None or value < 0:
        raise ParseError(
            f"line {lineno}: terse field {index + 1} should be a number that is not negative, "
            f"not {excerpt(fields[index], 30)}."
        )
    return value


def _terse_direction(fields: list[str], start: int, lineno: int) -> DirectionStats:
    io_kib, iops, runtime = (_terse_number(fields, start + i, lineno) for i in (0, 2, 3))
    stats = DirectionStats(iops, io_kib * 1024 * 1000 / runtime if runtime else 0.0, iops * runtime / 1000)
    stats.clat_max_us = _terse_number(fields, start + 9, lineno)
    stats.clat_mean_us = _terse_number(fields, start + 10, lineno)
    for index in range(start + 12, start + 32):
        percent, _, value = fields[index].partition("%=")
        if (share := finite(percent)) and 0 < share <= 100 and (latency := finite(value)) is not None:
            if latency < 0:
                raise ParseError(f"line {lineno}: terse field {index + 1} holds a negative latency, {latency:g}.")
            stats.percentiles_us[share] = latency
    return stats


def _is_terse(fields: list[str]) -> bool:
    if len(fields) < 3 or not (fields[0].isascii() and fields[0].isdigit()):
        return False
    # Version 2 has no "fio-3.x" field; its lines are told apart by their length. fio 2.0.8 wrote its version
    # without "fio-" ("3;2.0.8;job;0;0;...").
    return (
        fields[1].startswith("fio-")
        or bool(_BARE_VERSION.fullmatch(fields[1]))
        or (fields[0] == "2" and len(fields) >= _LAYOUTS["2"][2])
    )


def _rows(text: str) -> tuple[list[tuple[int, list[str]]], list[str]]:
    rows, diagnostics = [], []
    for lineno, line in enumerate(text.splitlines(), 1):
        fields = line.strip().split(";")
        if not _is_terse(fields):
            if line.strip():
                diagnostics.append(line.strip())
            continue
        if fields[0] not in _LAYOUTS:
            raise ParseError(
                f"line {lineno}: terse version {fields[0][:20]}; versions 2, 3, 4 and 5 are read (--terse-version)."
            )
        least = _LAYOUTS[fields[0]][2]
        if len(fields) < least:
            raise ParseError(
                f"line {lineno}: a terse v{fields[0]} line needs at least {least} fields; this one has {len(fields)}."
            )
        rows.append((lineno, fields))
    if not rows:
        raise ParseError(f"Expected fio terse lines like '3;fio-3.33;job;0;0;...'; found none in {excerpt(text)}.")
    return rows, diagnostics


def fio_terse_results(text: str) -> list[ParseResult]:
    """One result per group id of the terse lines, in output order. Terse output shows neither numjobs,
    block size, rw nor direct, so those stay None, and so does cpu_us_per_io (a line may stand for a group of
    jobs whose number it does not say)."""
    rows, diagnostics = _rows(text)
    messages = _errno_messages(diagnostics)
    groups: dict[str, list[int]] = {}
    for index, (_, fields) in enumerate(rows):
        groups.setdefault(fields[_LAYOUTS[fields[0]][0]], []).append(index)
    labeller = part_labeller([(None, group) for group in groups])
    results = []
    for group, members in groups.items():
        mine = [rows[i] for i in members]
        job_errors = []
        for index in members:
            lineno, fields = rows[index]
            group_field = _LAYOUTS[fields[0]][0]
            if errno := _terse_number(fields, group_field + 1, lineno):
                name = fields[group_field - 1]
                job_errors.append(
                    {"job": name, "index": index, "errno": int(errno), "message": messages.get(int(errno))}
                )
        merged = {
            d: merge_direction([_terse_direction(f, _LAYOUTS[f[0]][1][d], lineno) for lineno, f in mine])
            for d in ("read", "write")
        }
        clock = [
            (group, _terse_number(f, start + 3, lineno)) for lineno, f in mine for start in _LAYOUTS[f[0]][1].values()
        ]
        printed: dict[str, Any] = {}
        starts = [fio_own_view.terse_cpu_start(f, _CPU_STARTS[f[0]]) for _, f in mine]
        cpu, printed["cpu"] = fio_own_view.result_cpu(
            [fio_own_view.terse_cpu(f, start) for (_, f), start in zip(mine, starts, strict=True)]
        )
        disks: list[dict[str, Any]] = []
        if starts[0] is not None and mine[0][1][0] != "2":  # fio writes disks into version 3 and later only
            disks, printed["disk_util"] = fio_own_view.terse_disks(mine[0][1], starts[0] + _DISKS_AFTER_CPU)
        if len(mine) == 1:
            fields = mine[0][1]
            for direction, start in _LAYOUTS[fields[0]][1].items():
                if merged[direction]:
                    printed[direction] = printed_figures(
                        iops=fields[start + 2], bw=f"{fields[start + 1]} KiB/s", runtime=f"{fields[start + 3]} ms"
                    )
        summary = make_summary(
            tool="fio",
            tool_version=same_or_none([f[1].removeprefix("fio-") if f[0] != "2" else None for _, f in mine]),
            read=merged["read"],
            write=merged["write"],
            runtime_s=_clock_ms(clock) / 1000,
            printed=printed,
            cpu=cpu,
            disk_util=disks,
        )
        label = labeller(None, group, None)
        results.append(ParseResult("fio-terse", summary, list(diagnostics), job_errors, label=label))
    return results


def parse_fio_terse(text: str) -> ParseResult:
    """The terse lines' one result; for several groups, the first (fio_common.representative)."""
    return representative(fio_terse_results(text))
