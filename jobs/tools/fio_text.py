"""fio's normal text report (§4) and terse v3 lines (§5) read into the canonical summary (pure)."""

from __future__ import annotations

import math
import re
from typing import Any

from jobs.tools.fio_common import DIRECTIONS, _clock_ms, _errno_messages, _mode_read_percent
from jobs.tools.summary import (
    DirectionStats,
    ParseError,
    ParseResult,
    excerpt,
    finite,
    make_summary,
    merge_direction,
    real,
    same_or_none,
    whole,
)

# ---------------------------------------------------------------------------------------------------------
# Text report (§4). Everything is matched across whitespace, never by line, so a report pasted from a web
# page with its newlines collapsed into spaces still parses.

# Digits are [0-9], never \d, which also takes '١٢' and other scripts' digits that no fio prints.
_NUM = r"[0-9]+(?:\.[0-9]+)?"
# A name is the whole run of non-blanks before ": (groupid=". The lookbehind lets a match start only where
# such a run starts: without it, a long run of non-blanks was searched again from each of its characters.
# The other spans are bounded for the same reason: fio's texts there are short.
_TEXT_JOB = re.compile(  # "full: (groupid=0, jobs=1): err=28 (file:io_u.c:1876, ..., error=No space left on device)"
    r"(?<!\S)(?P<name>\S+): \(groupid=(?P<group>[0-9]+), jobs=(?P<jobs>[0-9]+)\): err=\s*(?P<err>[0-9]+)"
    r"(?: \([^)]{0,300}?\berror=(?P<message>[^)]{0,300})\))?"
)
_TEXT_DESC = re.compile(
    r"(?<!\S)(?P<name>\S+): \(g=[0-9]+\): rw=(?P<rw>\w+), bs=(?P<bs>[^\n]{0,1000}?), "
    r"ioengine=(?P<ioengine>[\w:/.-]+), iodepth=(?P<iodepth>[0-9]+)"
)
_TEXT_DIR_3 = re.compile(  # 3.x and 2.17+: "read: IOPS=17.0k, BW=66.4MiB/s (69.6MB/s)(199MiB/3001msec)"
    rf"\b(?P<dir>read|write|trim|mixed)\s*:\s*IOPS=(?P<iops>{_NUM}[kMGTPE]?),\s*"
    rf"BW=(?P<bw>{_NUM})(?P<bw_unit>[kKMGTPE]?i?B)/s\s*\([^)]{{0,100}}\)\s*\({_NUM}[kKMGTPE]?i?B/"
    r"(?P<runtime>[0-9]+)msec\)"
)
_TEXT_DIR_2 = re.compile(  # 2.x: "read : io=323972KB, bw=107955KB/s, iops=26988, runt=  3001msec"
    rf"\b(?P<dir>read|write|trim|mixed)\s*:\s*io=\s*{_NUM}\s*[KMGTPE]?B,\s*bw=\s*(?P<bw>{_NUM})\s*"
    rf"(?P<bw_unit>[KMGTPE]?B)/s,\s*iops=\s*(?P<iops>{_NUM}[kKMGTPE]?)\s*,\s*runt=\s*(?P<runtime>[0-9]+)\s*msec"
)
_TEXT_CLAT = re.compile(
    rf"\bclat \((?P<unit>[num]sec)\)\s*:\s*min=\s*{_NUM}[kKMG]?,\s*max=\s*(?P<max>{_NUM}[kKMG]?),\s*"
    rf"avg=\s*(?P<avg>{_NUM}[kKMG]?)"
)
_TEXT_PERCENTILES = re.compile(r"\bclat percentiles \((?P<unit>[num]sec)\)\s*:")
_TEXT_PERCENTILE = re.compile(rf"[\s|,]*(?P<percent>{_NUM})th=\[\s*(?P<value>{_NUM}[kKMG]?)\s*\]")
_TEXT_ISSUED = re.compile(
    r"issued rwts\s*:\s*total=([0-9]+),([0-9]+),([0-9]+)|issued\s*:\s*total=r=([0-9]+)/w=([0-9]+)/[dt]=([0-9]+)"
)
_TEXT_VERSION = re.compile(r"(?<![\w.-])fio-([0-9]+\.[0-9]+[\w.+-]*)")
_RUN_STATUS = re.compile(r"Run status group [0-9]+")
_PREFIXES = "KMGTPE"
_UNITS_PER_US = {"nsec": 1000.0, "usec": 1.0, "msec": 0.001}


def _count(token: str, where: str) -> float:
    """A num2str number: a trailing k/M/G... is a power of 1000 (IOPS, latencies)."""
    if token[-1].isalpha():
        return _scaled(token[:-1], 1000 ** (_PREFIXES.index(token[-1].upper()) + 1), where)
    return real(token, where)


def _bytes(number: str, unit: str, legacy: bool, where: str) -> float:
    """3.x prints KiB (1024) and kB (1000); 2.x's KB and MB were 1024-based (§4)."""
    prefix = unit.rstrip("B").rstrip("i")
    base = 1024 if legacy or unit.endswith("iB") else 1000
    return _scaled(number, base ** (_PREFIXES.index(prefix.upper()) + 1 if prefix else 0), where)


def _scaled(number: str, factor: int, where: str) -> float:
    value = real(number, where) * factor
    if math.isinf(value):
        raise ParseError(f"{where}: {excerpt(number, 30)} times {factor} is too large to be a number fio printed.")
    return value


def _text_block_size(bs: str, where: str) -> int | None:
    """The block size when reads and writes use one fixed size: "(R) 4096B-4096B, (W) ..." or 2.x "4K-4K/4K-4K/..."."""
    legacy = "(R)" not in bs
    if legacy:
        ranges = [part.split("-") for part in bs.split("/")[:2]]
    else:
        ranges = [list(m.groups()) for m in re.finditer(r"\([RW]\)\s*(\S+?)-(\S+?),", bs)]
    sizes = set()
    for token in (token for pair in ranges for token in pair):
        match = re.fullmatch(rf"({_NUM})([KMGTPE]?i?B?)", token, re.IGNORECASE)
        if not match:
            return None
        unit = match[2].upper().replace("I", "i")
        sizes.add(round(_bytes(match[1], unit if unit.endswith("B") else unit + "B", legacy, where)))
    return sizes.pop() if len(sizes) == 1 else None


def _text_percentiles(body: str, where: str) -> dict[float, float]:
    head = _TEXT_PERCENTILES.search(body)
    if not head:
        return {}
    per_us, pos, result = _UNITS_PER_US[head["unit"]], head.end(), {}
    while match := _TEXT_PERCENTILE.match(body, pos):
        result[real(match["percent"], where)] = _count(match["value"], f"{where} {match['percent']}th") / per_us
        pos = match.end()
    return result


def parse_fio_text(text: str) -> ParseResult:
    headers = list(_TEXT_JOB.finditer(text))
    if not headers:
        raise ParseError(
            "Expected a fio text report with job headers like 'name: (groupid=0, jobs=1): err= 0: pid=...'; "
            f"found none in text starting {excerpt(text)}."
        )
    parts: dict[str, list[DirectionStats]] = {"read": [], "write": [], "mixed": []}
    clock: list[tuple[Any, float]] = []
    job_errors = []
    diagnostics = [line.strip() for line in text.splitlines() if line.strip().startswith("fio:")]
    messages = _errno_messages(diagnostics)
    processes = 0
    for index, header in enumerate(headers):
        job = f"job {index + 1} ({excerpt(header['name'], 40)})"
        processes += whole(header["jobs"], f"{job}: jobs=")
        end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
        section = text[header.end() : end]
        if run_status := _RUN_STATUS.search(section):
            section = section[: run_status.start()]
        if errno := whole(header["err"], f"{job}: err="):
            message = header["message"] or messages.get(errno)
            job_errors.append({"job": header["name"], "index": index, "errno": errno, "message": message})
        legacy = not _TEXT_DIR_3.search(section)
        found = list((_TEXT_DIR_2 if legacy else _TEXT_DIR_3).finditer(section))
        issued = _TEXT_ISSUED.search(section)
        counts = [whole(n, f"{job}: issued total=") for n in issued.groups() if n is not None] if issued else []
        for number, match in enumerate(found):
            body = section[match.end() : found[number + 1].start() if number + 1 < len(found) else len(section)]
            direction = match["dir"]
            where = f"{job}, {direction}"
            runtime = whole(match["runtime"], f"{where}: runtime")
            clock.append((header["group"], runtime))
            ios: float | None = None
            if counts and direction != "trim":
                ios = sum(counts) if direction == "mixed" else counts[DIRECTIONS.index(direction)]
            iops = ios * 1000 / runtime if ios is not None and runtime else _count(match["iops"], f"{where}: IOPS")
            bw = _bytes(match["bw"], match["bw_unit"], legacy, f"{where}: BW")
            stats = DirectionStats(iops, bw, ios or iops * runtime / 1000)
            if clat := _TEXT_CLAT.search(body):
                per_us = _UNITS_PER_US[clat["unit"]]
                stats.clat_mean_us = _count(clat["avg"], f"{where}: clat avg") / per_us
                stats.clat_max_us = _count(clat["max"], f"{where}: clat max") / per_us
            stats.percentiles_us = _text_percentiles(body, f"{where}: clat percentile")
            if direction in parts:
                parts[direction].append(stats)
    descriptions = list(_TEXT_DESC.finditer(text))
    read, write = merge_direction(parts["read"]), merge_direction(parts["write"])
    mixed = merge_direction(parts["mixed"])
    version = _TEXT_VERSION.search(text)
    summary = make_summary(
        tool="fio",
        tool_version=version[1] if version else None,
        read=read,
        write=write,
        total=None if read or write or not mixed else {k: mixed[k] for k in ("iops", "bw_bytes_per_s")},
        processes=processes,
        block_size_bytes=same_or_none(
            [_text_block_size(d["bs"], f"{excerpt(d['name'], 40)}: bs=") for d in descriptions]
        ),
        read_percent=same_or_none([_mode_read_percent(d["rw"], None) for d in descriptions]),
        runtime_s=_clock_ms(clock) / 1000 if clock else None,
    )
    settings = {key: descriptions[0][key] for key in ("rw", "bs", "ioengine", "iodepth")} if descriptions else {}
    return ParseResult("fio-text", summary, diagnostics, job_errors, settings)


# ---------------------------------------------------------------------------------------------------------
# Terse v3 (§5): header fields 0-4, then a READ block at 5 and a WRITE block at 46, 41 fields each:
# io KiB, bw KiB/s, iops, runtime ms, slat min/max/mean/dev, clat min/max/mean/dev (µs), 20 clat
# percentiles "P%=V" (µs), lat min/max/mean/dev, bw min/max/agg%/mean/dev.

_TERSE_BLOCKS = {"read": 5, "write": 46}
_TERSE_MIN_FIELDS = 87


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


def parse_fio_terse(text: str) -> ParseResult:
    """Terse v3 lines, one per job (or per group with group_reporting); other lines become diagnostics.

    Terse output shows neither numjobs, block size, rw nor direct, so those stay None.
    """
    rows, diagnostics = [], []
    for lineno, line in enumerate(text.splitlines(), 1):
        fields = line.strip().split(";")
        if len(fields) < 3 or not (fields[0].isascii() and fields[0].isdigit()) or not fields[1].startswith("fio-"):
            if line.strip():
                diagnostics.append(line.strip())
            continue
        if fields[0] != "3":
            raise ParseError(f"line {lineno}: terse version {fields[0]}; only version 3 is read (--terse-version=3).")
        if len(fields) < _TERSE_MIN_FIELDS:
            raise ParseError(
                f"line {lineno}: a terse v3 line needs at least {_TERSE_MIN_FIELDS} fields; this one has {len(fields)}."
            )
        rows.append((lineno, fields))
    if not rows:
        raise ParseError(f"Expected fio terse lines like '3;fio-3.33;job;0;0;...'; found none in {excerpt(text)}.")
    messages = _errno_messages(diagnostics)
    job_errors = [
        {"job": fields[2], "index": index, "errno": int(errno), "message": messages.get(int(errno))}
        for index, (lineno, fields) in enumerate(rows)
        if (errno := _terse_number(fields, 4, lineno))
    ]
    merged = {
        d: merge_direction([_terse_direction(fields, start, lineno) for lineno, fields in rows])
        for d, start in _TERSE_BLOCKS.items()
    }
    clock = [
        (fields[3], _terse_number(fields, start + 3, lineno))
        for lineno, fields in rows
        for start in _TERSE_BLOCKS.values()
    ]
    summary = make_summary(
        tool="fio",
        tool_version=same_or_none([fields[1].removeprefix("fio-") for _, fields in rows]),
        read=merged["read"],
        write=merged["write"],
        runtime_s=_clock_ms(clock) / 1000,
    )
    return ParseResult("fio-terse", summary, diagnostics, job_errors)
