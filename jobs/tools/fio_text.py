"""fio's normal text report (docs/reference/fio-output.md#text-report) read into the canonical summary, one result
per group and per client (pure).

Read: fio 2.0-2.x job sections ("read : io=323972KB, bw=107955KB/s, iops=26988, runt=  3001msec", "clat (usec)")
and 3.x ones ("read: IOPS=17.0k, BW=66.4MiB/s (69.6MB/s)(199MiB/3001msec)", percentiles in ns, µs or ms);
several groups (stonewall, new_group: one result each, with its own runtime); client/server output
(fio --client: each client's sections, then the "All clients" sections); and a report printed several times
(--status-interval), of which the last printing is read. Everything is matched across whitespace, never by
line, so a report pasted from a web page with its newlines collapsed into spaces still parses.
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass, field
from typing import Any

from jobs.tools import fio_own_view
from jobs.tools.fio_common import (
    DIRECTIONS,
    _clock_ms,
    _errno_messages,
    _mode_read_percent,
    checked_read_percent,
    part_labeller,
    representative,
)
from jobs.tools.summary import (
    DirectionStats,
    ParseError,
    ParseResult,
    excerpt,
    make_summary,
    make_workload,
    merge_direction,
    printed_figures,
    real,
    same_or_none,
    whole,
)

# Digits are [0-9], never \d, which also takes '١٢' and other scripts' digits that no fio prints.
_NUM = r"[0-9]+(?:\.[0-9]+)?"
# A name is the whole run of non-blanks before ": (groupid=" ("All clients" in client/server output, maybe
# after a "<host> " prefix). The lookbehind lets a match start only where such a run starts: without it, a long
# run of non-blanks was searched again from each of its characters. The other spans are bounded for the same
# reason: fio's texts there are short.
_TEXT_JOB = re.compile(  # "full: (groupid=0, jobs=1): err=28 (file:io_u.c:1876, ..., error=No space left on device)"
    r"(?<!\S)(?:<(?P<host>[^<>\s]{1,255})>[^\S\n]{1,10})?(?P<name>All clients|\S+): "
    r"\(groupid=(?P<group>[0-9]+), jobs=(?P<jobs>[0-9]+)\): err=\s*(?P<err>[0-9]+)"
    r"(?: \([^)]{0,300}?\berror=(?P<message>[^)]{0,300})\))?"
)
_TEXT_DESC = re.compile(  # "rr: (g=0): rw=randread, bs=(R) 4096B-4096B, (W) ..., ioengine=psync, iodepth=1"
    r"(?<!\S)(?P<name>\S+): \(g=(?P<group>[0-9]+)\): rw=(?P<rw>\w+), bs=(?P<bs>[^\n]{0,1000}?), "
    r"ioengine=(?P<ioengine>[\w:/.-]+), iodepth=(?P<iodepth>[0-9]+)"
)
# 3.x and 2.17+: "read: IOPS=17.0k, BW=66.4MiB/s (69.6MB/s)(199MiB/3001msec)"; an "All clients" section of
# client/server output prints "BW=71.1Mi (74.6M)(71.2MiB/1001msec)".
TEXT_DIR_3 = re.compile(
    rf"\b(?P<dir>read|write|trim|mixed)\s*:\s*IOPS=(?P<iops>{_NUM}[kMGTPE]?),\s*"
    rf"BW=(?P<bw_text>(?P<bw>{_NUM})(?P<bw_unit>[kKMGTPE]?i?)(?P<per_s>B/s)?)\s*\((?P<bw_alt>[^)]{{0,100}})\)\s*"
    rf"\((?P<io>{_NUM})(?P<io_unit>[kKMGTPE]?i?)B/(?P<runtime>[0-9]+)msec\)"
)
# 2.x: "read : io=323972KB, bw=107955KB/s, iops=26988, runt=  3001msec"
TEXT_DIR_2 = re.compile(
    rf"\b(?P<dir>read|write|trim|mixed)\s*:\s*io=\s*(?P<io>{_NUM})\s*(?P<io_unit>[KMGTPE]?)B,\s*"
    rf"bw=\s*(?P<bw_text>(?P<bw>{_NUM})\s*(?P<bw_unit>[KMGTPE]?)(?P<per_s>B/s)),\s*"
    rf"iops=\s*(?P<iops>{_NUM}[kKMGTPE]?)\s*,"
    r"\s*runt=\s*(?P<runtime>[0-9]+)\s*msec"
)
# After each group's sections: "Run status group 0 (all jobs):", then per direction 3.x
# "READ: bw=35.5MiB/s (37.2MB/s), 35.5MiB/s-35.5MiB/s (...), io=35.5MiB (37.2MB), run=1001-1001msec" or 2.x
# "READ: io=323972KB, aggrb=107955KB/s, minb=..., maxb=..., mint=3001msec, maxt=3001msec".
_GROUP_STATUS = re.compile(r"Run status group (?P<group>[0-9]+) \(all jobs\):")
_GROUP_DIR = re.compile(
    r"(?P<dir>READ|WRITE|TRIM|MIXED):\s*(?:bw=(?P<bw>[0-9.]+[kKMGTPE]?i?B/s)\s*\((?P<bw_alt>[^)]{0,40})\),"
    r"[^\n]{0,300}?\brun=\s*[0-9]+-(?P<run>[0-9]+msec)"
    r"|io=[^,\n]{0,40},\s*aggrb=(?P<aggrb>[0-9.]+[KMGTPE]?B/s),[^\n]{0,300}?\bmaxt=\s*(?P<maxt>[0-9]+msec))"
)
# fio 2.0 printed a blank before each comma: "clat (usec): min=22 , max=1805.8K, avg=300904.66, ..."
_TEXT_CLAT = re.compile(
    rf"\bclat \((?P<unit>[num]sec)\)\s*:\s*min=\s*{_NUM}[kKMG]?\s*,\s*max=\s*(?P<max>{_NUM}[kKMG]?)\s*,\s*"
    rf"avg=\s*(?P<avg>{_NUM}[kKMG]?)"
)
_TEXT_PERCENTILES = re.compile(r"\bclat percentiles \((?P<unit>[num]sec)\)\s*:")
_TEXT_PERCENTILE = re.compile(rf"[\s|,]*(?P<percent>{_NUM})th=\[\s*(?P<value>{_NUM}[kKMG]?)\s*\]")
# 3.x "issued rwts: total=0,97712,0,0", 3.0-3.1 "issued rwt: total=0,1048576,0,", 2.x "issued : total=r=/w=/d=".
_TEXT_ISSUED = re.compile(
    r"issued rwts?\s*:\s*total=([0-9]+),([0-9]+),([0-9]+)|issued\s*:\s*total=r=([0-9]+)/w=([0-9]+)/[dt]=([0-9]+)"
)
# "fio-3.33"; fio 2.0.8 printed its bare version on the line before "Starting 1 process".
TEXT_VERSION = re.compile(
    r"(?<![\w.-])fio-([0-9]+\.[0-9]+[\w.+-]*)|(?m:^[^\S\n]*([0-9]+\.[0-9]+[\w.+-]*)[^\S\n]*\n[^\S\n]*Starting [0-9]+ )"
)
# Where a group's job sections end: its run status, or (client/server output) the client's disk stats.
_SECTION_END = re.compile(r"Run status group [0-9]+|\bDisk stats \(read/write\):")
PRINTED_KEY = {"read": "read", "write": "write", "mixed": "total"}
_PREFIXES = "KMGTPE"
_UNITS_PER_US = {"nsec": 1000.0, "usec": 1.0, "msec": 0.001}


def _count(token: str, where: str) -> float:
    """A num2str number: a trailing k/M/G... is a power of 1000 (IOPS, latencies)."""
    if token[-1].isalpha():
        return _scaled(token[:-1], 1000 ** (_PREFIXES.index(token[-1].upper()) + 1), where)
    return real(token, where)


def _bytes(number: str, unit: str, legacy: bool, where: str) -> float:
    """3.x prints KiB (1024) and kB (1000); 2.x's KB and MB were 1024-based (#text-report). An "All clients" section
    leaves the B out ("71.1Mi (74.6M)")."""
    prefix = unit.rstrip("B").rstrip("i")
    base = 1024 if legacy or unit.rstrip("B").endswith("i") else 1000
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


def compact_block_size(bs: str) -> str:
    """The bs of a job description as printed, one token when every range is one size ("(R) 4096B-4096B, (W)
    4096B-4096B, (T) 4096B-4096B" -> "4096B", 2.x "4K-4K/4K-4K/4K-4K" -> "4K"); otherwise all of it."""
    sizes = {size for pair in re.findall(r"([0-9][^\s,/()-]*)-([0-9][^\s,/()-]*)", bs) for size in pair}
    return sizes.pop() if len(sizes) == 1 else bs.strip()


def direction_stats(match: re.Match[str], legacy: bool, ios: float | None, where: str) -> DirectionStats:
    """One "read: IOPS=..., BW=..." (or 2.x "read : io=..., bw=...") line; IOPS exact from ios when known."""
    runtime = whole(match["runtime"], f"{where}: runtime")
    iops = ios * 1000 / runtime if ios is not None and runtime else _count(match["iops"], f"{where}: IOPS")
    bw = _bytes(match["bw"], match["bw_unit"], legacy, f"{where}: BW")
    return DirectionStats(iops, bw, ios if ios is not None else iops * runtime / 1000)


def printed_line(match: re.Match[str]) -> dict[str, str] | None:
    """summary["printed"] of one direction line: its tokens exactly as fio printed them."""
    return printed_figures(
        iops=match["iops"],
        bw=match["bw_text"],
        bw_alt=match.groupdict().get("bw_alt"),
        runtime=match["runtime"] + "msec",
    )


@dataclass
class _Part:
    """One result of a text report: the job sections of one group of one client (or of "All clients")."""

    client: str | None
    group: str
    headers: list[int] = field(default_factory=list)
    status: str = ""  # the group's "Run status group N" lines, when printed


def _segments(text: str, headers: list[re.Match[str]]) -> list[list[int]]:
    """Runs of job sections with no run status between them: one per printing of the report, per client in
    client/server output."""
    segments = [[0]]
    # "All clients" comes once per group, so a second one of a group starts another report (pastes of several
    # runs' "All clients" sections, each cut down to its first lines).
    all_clients = {headers[0]["group"]} if headers[0]["name"] == "All clients" else set()
    for index in range(1, len(headers)):
        header = headers[index]
        repeated = header["name"] == "All clients" and header["group"] in all_clients
        if repeated or _SECTION_END.search(text, headers[index - 1].end(), header.start()):
            segments.append([index])
            all_clients = set()
        else:
            segments[-1].append(index)
        if header["name"] == "All clients":
            all_clients.add(header["group"])
    return segments


def _parts(text: str, headers: list[re.Match[str]], diagnostics: list[str]) -> list[_Part]:
    segments = _segments(text, headers)
    clients = any(header["name"] == "All clients" or header["host"] for header in headers)
    if not clients and len(segments) > 1:
        diagnostics.append(
            f"The report is printed {len(segments)} times (--status-interval); the last printing is read."
        )
        segments = segments[-1:]
    parts: list[_Part] = []
    numbered = 0
    for segment in segments:
        first = headers[segment[0]]
        if not clients:
            client = None
        elif first["name"] == "All clients":
            client = "All clients"
        else:
            numbered += 1
            client = f"client {first['host']}" if first["host"] else f"client {numbered}"
        by_group: dict[str, _Part] = {}
        for index in segment:
            group = headers[index]["group"]
            by_group.setdefault(group, _Part(client, group)).headers.append(index)
        end = headers[segment[-1] + 1].start() if segment[-1] + 1 < len(headers) else len(text)
        for status in _GROUP_STATUS.finditer(text, headers[segment[-1]].end(), end):
            if status["group"] in by_group:
                stop = _SECTION_END.search(text, status.end(), end)
                by_group[status["group"]].status = text[status.end() : stop.start() if stop else end]
        parts.extend(by_group.values())
    if numbered:
        hosts = re.findall(r"(?m)^hostname=([^,\n]{1,255}),", text)
        diagnostics.append(
            f"fio's text report does not say which client printed each section; they are numbered in the order "
            f"printed{' (the clients: ' + ', '.join(hosts) + ')' if hosts else ''}."
        )
    return parts


def _section(text: str, headers: list[re.Match[str]], index: int) -> str:
    """Job section index: from its header to the next header or the end of the group's sections."""
    end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
    section = text[headers[index].end() : end]
    if stop := _SECTION_END.search(section):
        section = section[: stop.start()]
    return section


def _job_directions(
    text: str, headers: list[re.Match[str]], index: int, where: str
) -> list[tuple[re.Match[str], DirectionStats, bool]]:
    """Each direction line of job section index with its statistics, and whether it is a 2.x line."""
    section = _section(text, headers, index)
    legacy = not TEXT_DIR_3.search(section)
    found = list((TEXT_DIR_2 if legacy else TEXT_DIR_3).finditer(section))
    issued = _TEXT_ISSUED.search(section)
    counts = [whole(n, f"{where}: issued total=") for n in issued.groups() if n is not None] if issued else []
    result = []
    for number, match in enumerate(found):
        body = section[match.end() : found[number + 1].start() if number + 1 < len(found) else len(section)]
        direction = match["dir"]
        at = f"{where}, {direction}"
        ios: float | None = None
        if counts and direction != "trim":
            ios = sum(counts) if direction == "mixed" else counts[DIRECTIONS.index(direction)]
        stats = direction_stats(match, legacy, ios, at)
        if clat := _TEXT_CLAT.search(body):
            per_us = _UNITS_PER_US[clat["unit"]]
            stats.clat_mean_us = _count(clat["avg"], f"{at}: clat avg") / per_us
            stats.clat_max_us = _count(clat["max"], f"{at}: clat max") / per_us
        stats.percentiles_us = _text_percentiles(body, f"{at}: clat percentile")
        result.append((match, stats, legacy))
    return result


@dataclass
class _Report:
    """What every result of one text report shares, found once."""

    text: str
    headers: list[re.Match[str]]
    descriptions: dict[str, list[re.Match[str]]]  # by group id
    diagnostics: list[str]
    messages: dict[int, str]
    version: str | None
    disk_blocks: list[fio_own_view.DiskBlock]


def _part_result(report: _Report, part: _Part, label: str) -> ParseResult:
    text, headers, diagnostics, messages = report.text, report.headers, list(report.diagnostics), report.messages
    stats: dict[str, list[DirectionStats]] = {"read": [], "write": [], "mixed": []}
    printed: dict[str, Any] = {}
    clock: list[tuple[Any, float]] = []
    job_errors = []
    processes = 0
    cpus: list[fio_own_view.CpuLine] = []
    ios: float | None = 0.0
    for index in part.headers:
        header = headers[index]
        job = f"job {index + 1} ({excerpt(header['name'], 40)})"
        processes += whole(header["jobs"], f"{job}: jobs=")
        section = _section(text, headers, index)
        cpus.append(fio_own_view.text_cpu(section, job))
        issued = _TEXT_ISSUED.search(section)
        counts = [whole(n, f"{job}: issued total=") for n in issued.groups() if n is not None] if issued else None
        ios = None if ios is None or counts is None else ios + sum(counts)
        if errno := whole(header["err"], f"{job}: err="):
            message = header["message"] or messages.get(errno)
            job_errors.append({"job": header["name"], "index": index, "errno": errno, "message": message})
        for match, direction_stats_, _ in _job_directions(text, headers, index, job):
            clock.append((header["group"], whole(match["runtime"], f"{job}: runtime")))
            if match["dir"] in stats:
                stats[match["dir"]].append(direction_stats_)
                if len(part.headers) == 1:
                    printed[PRINTED_KEY[match["dir"]]] = printed_line(match)
    if len(part.headers) > 1:  # several job sections: fio prints the group's bandwidth in its run status
        for line in _GROUP_DIR.finditer(part.status):
            key = PRINTED_KEY.get(line["dir"].lower())
            if key:
                printed[key] = printed_figures(
                    bw=line["bw"] or line["aggrb"], bw_alt=line["bw_alt"], runtime=line["run"] or line["maxt"]
                )
    read, write = merge_direction(stats["read"]), merge_direction(stats["write"])
    mixed = merge_direction(stats["mixed"])
    cpu, printed["cpu"] = fio_own_view.result_cpu(cpus)
    disks, printed["disk_util"] = _part_disks(report, part)
    # The descriptions of this group; client/server output prints each client's, the same ones.
    mine = list(
        {
            (d["name"], d["rw"], d["bs"], d["ioengine"], d["iodepth"]): d
            for d in report.descriptions.get(part.group, [])
        }.values()
    )
    read_percent = checked_read_percent(
        same_or_none([_mode_read_percent(d["rw"], None) for d in mine]), read, write, diagnostics
    )
    workload = make_workload(
        rw=same_or_none([d["rw"] for d in mine]),
        block_size=same_or_none([compact_block_size(d["bs"]) for d in mine]),
        iodepth=same_or_none([whole(d["iodepth"], "iodepth=") for d in mine]),
        numjobs=processes if len(mine) == 1 and part.client != "All clients" else None,
        read_percent=read_percent,
        ioengine=same_or_none([d["ioengine"] for d in mine]),
    )
    summary = make_summary(
        tool="fio",
        tool_version=report.version,
        read=read,
        write=write,
        total=None if read or write or not mixed else {k: mixed[k] for k in ("iops", "bw_bytes_per_s")},
        processes=processes,
        block_size_bytes=same_or_none([_text_block_size(d["bs"], f"{excerpt(d['name'], 40)}: bs=") for d in mine]),
        read_percent=read_percent,
        runtime_s=_clock_ms(clock) / 1000 if clock else None,
        printed=printed,
        workload=workload,
        cpu=cpu,
        disk_util=disks,
        ios=ios,
    )
    settings = {key: mine[0][key] for key in ("rw", "bs", "ioengine", "iodepth")} if mine else {}
    return ParseResult("fio-text", summary, diagnostics, job_errors, settings, label=label)


def _part_disks(report: _Report, part: _Part) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The disk stats a part's report ends with: the first block after its last job section (a run prints one
    after all its groups, a --client run one per client); "All clients" has every client's."""
    blocks = report.disk_blocks
    if part.client == "All clients":
        blocks = [block for block in blocks if block[1]]
        return [d for b in blocks for d in b[1]], [p for b in blocks for p in b[2]]
    after = bisect.bisect_left(blocks, report.headers[part.headers[-1]].end(), key=lambda block: block[0])
    return (blocks[after][1], blocks[after][2]) if after < len(blocks) else ([], [])


def fio_text_results(text: str) -> list[ParseResult]:
    """One result per group of the report (per client and group in client/server output), in output order."""
    headers = list(_TEXT_JOB.finditer(text))
    if not headers:
        raise ParseError(
            "Expected a fio text report with job headers like 'name: (groupid=0, jobs=1): err= 0: pid=...'; "
            f"found none in text starting {excerpt(text)}."
        )
    diagnostics = [line.strip() for line in text.splitlines() if line.strip().startswith("fio:")]
    parts = _parts(text, headers, diagnostics)
    descriptions: dict[str, list[re.Match[str]]] = {}
    for description in _TEXT_DESC.finditer(text):
        descriptions.setdefault(description["group"], []).append(description)
    version = TEXT_VERSION.search(text)
    report = _Report(
        text,
        headers,
        descriptions,
        diagnostics,
        _errno_messages(diagnostics),
        (version[1] or version[2]) if version else None,
        fio_own_view.text_disk_blocks(text),
    )
    labeller = part_labeller([(p.client, p.group) for p in parts])
    results: list[ParseResult] = []
    seen: dict[str, int] = {}
    for part in parts:
        rws = {d["rw"] for d in descriptions.get(part.group, [])}
        label = labeller(part.client, part.group, rws.pop() if len(rws) == 1 else None)
        seen[label] = seen.get(label, 0) + 1
        if label and seen[label] > 1:
            label = f"{label} #{seen[label]}"
        results.append(_part_result(report, part, label))
    return results


def parse_fio_text(text: str) -> ParseResult:
    """The text report's one result; for several groups or clients, the one fio_common.representative picks."""
    return representative(fio_text_results(text))
