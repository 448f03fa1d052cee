"""fio: a profile becomes a job file and a command line; fio's output becomes the canonical summary (pure).

The parsers read JSON from fio 2.x and 3.x (one document, or the cumulative stream --status-interval
writes), the normal text report (also when pasted with its newlines collapsed into spaces) and terse v3
lines. /work/shared/docs/fio-reference.md is the specification; section numbers below refer to it.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from jobs.tools.options import (
    IOENGINES,
    ToolOptionError,
    bool_param,
    int_param,
    option_problem,
    run_id_of,
    safe_path,
)
from jobs.tools.summary import (
    DirectionStats,
    ParseError,
    ParseResult,
    excerpt,
    finite,
    make_summary,
    merge_direction,
    same_or_none,
)

RW_MODES = ("read", "write", "randread", "randwrite", "rw", "randrw")
READ_ONLY_MODES = frozenset({"read", "randread"})
WRITE_ONLY_MODES = frozenset({"write", "randwrite"})
MIXED_MODES = frozenset({"rw", "readwrite", "randrw"})
DIRECTIONS = ("read", "write")


@dataclass(frozen=True)
class FioJob:
    jobfile: str  # the INI text to store at jobfile_path on the target
    argv: list[str]
    jobfile_path: str
    output_path: str

    def argv_quoted(self) -> str:
        return " ".join(shlex.quote(arg) for arg in self.argv)


def build_fio_job(
    params: dict[str, Any], target_path: str, target_kind: str, run_dir: str, *, readonly: bool
) -> FioJob:
    """The job file and command line for one run of a fio profile (Profile.parameters()) on one target.

    readonly says the run must not write. Profiles whose rw only reads are treated as read-only anyway.
    """
    if params.get("tool", "fio") != "fio":
        raise ToolOptionError("tool", f"build_fio_job needs a fio profile, not {params.get('tool')!r}.")
    if target_kind not in ("directory", "block"):
        raise ToolOptionError("target_kind", f"target_kind must be 'directory' or 'block', not {target_kind!r}.")
    rw = params.get("rw")
    if rw not in RW_MODES:
        raise ToolOptionError("rw", f"rw must be one of {', '.join(RW_MODES)}; got {rw!r}.")
    if readonly and rw not in READ_ONLY_MODES:
        raise ToolOptionError("rw", f"This run must not write, but rw={rw} writes; choose read or randread.")
    readonly = rw in READ_ONLY_MODES
    ioengine = params.get("ioengine")
    if ioengine not in IOENGINES:
        raise ToolOptionError("ioengine", f"ioengine must be one of {', '.join(sorted(IOENGINES))}; got {ioengine!r}.")
    size = params.get("size_bytes")
    if size is not None:
        size = int_param(params, "size_bytes", 1)
    elif target_kind == "directory":
        raise ToolOptionError("size_bytes", "Give a size: fio creates a file of that size per job in the directory.")
    extras = params.get("extra_options") or {}
    if not isinstance(extras, dict):
        raise ToolOptionError("extra_options", "extra_options must map fio option names to values.")
    for name, value in extras.items():
        problem = option_problem(name, value)
        if problem:
            raise ToolOptionError("extra_options", problem)
    target = safe_path(target_path)
    run_dir = safe_path(run_dir, "run_dir")
    run_id = run_id_of(run_dir)
    jobs = int_param(params, "jobs", 1)
    ramp = int_param(params, "ramp_time_s", 0)

    lines = [
        f"; benchweb run {run_id}. Sizes are byte counts on purpose: fio reads 4KiB as 4000 (pitfall 2.7).",
        # The job name is also the test file's name in a directory (benchweb-<run>.<job>.0), so two runs
        # on one directory never share a file.
        f"[benchweb-{run_id}]",
        f"ioengine={ioengine}",
        f"rw={rw}",
    ]
    if rw in MIXED_MODES:
        lines.append(f"rwmixread={int_param(params, 'read_percent', 0, 100)}")
    lines += [
        f"bs={int_param(params, 'block_size_bytes', 1)}",
        f"iodepth={int_param(params, 'iodepth', 1)}",
        f"direct={int(bool_param(params, 'direct'))}",
        f"numjobs={jobs}",
    ]
    if jobs > 1 and "group_reporting" not in extras:
        # One merged entry per run keeps latency percentiles exact; separate entries can't be combined (§1.5).
        lines.append("group_reporting=1")
    lines += [f"runtime={int_param(params, 'runtime_s', 1)}", f"time_based={int(bool_param(params, 'time_based'))}"]
    if ramp:
        lines.append(f"ramp_time={ramp}")
    if size is not None:
        lines.append(f"size={size}")
    if target_kind == "directory":
        # No --readonly here even for reads: fio must first lay the test file out, which is a write, and
        # --readonly forbids that. The file is benchweb's own, so unlink=1 removes it afterwards.
        lines += [f"directory={target}", "unlink=1"]
    else:
        lines.append(f"filename={target}")
        if readonly:
            lines.append("allow_file_create=0")
    lines += [f"{name}={value}" for name, value in extras.items()]

    jobfile_path = f"{run_dir}/job.fio"
    output_path = f"{run_dir}/result.json"
    argv = ["fio", "--output-format=json", "--status-interval=1", f"--output={output_path}"]
    if readonly and target_kind == "block":
        argv.append("--readonly")
    argv.append(jobfile_path)
    return FioJob("\n".join(lines) + "\n", argv, jobfile_path, output_path)


# ---------------------------------------------------------------------------------------------------------
# JSON (§1, §2)

_DOC_START = re.compile(r'\{\s*"fio version"\s*:')
# A JSON string, or a bare nan/inf where a number belongs: fio prints doubles with %f (§2.3).
_NON_FINITE = re.compile(r'"(?:[^"\\]|\\.)*"|(?<=[:\[,\s])-?(?:nan|inf(?:inity)?)\b', re.IGNORECASE)
_DECODER = json.JSONDecoder(strict=False)  # strict=False: fio does not escape control characters
MIN_SAMPLE_MS = 250


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _decode(text: str, start: int, limit: int) -> tuple[dict[str, Any], int]:
    try:
        return _DECODER.raw_decode(text, start)
    except json.JSONDecodeError:
        pass
    shifts: list[tuple[int, int]] = []

    def to_null(match: re.Match[str]) -> str:
        if match.group().startswith('"'):
            return match.group()
        shifts.append((match.start(), len("null") - len(match.group())))
        return "null"

    cleaned = _NON_FINITE.sub(to_null, text[start:limit])
    try:
        doc, end = _DECODER.raw_decode(cleaned)
    except json.JSONDecodeError as exc:
        raise ParseError(
            f"line {_line_of(text, start)}: the fio JSON document starting here is invalid: {exc.msg} "
            f"at its line {exc.lineno}, column {exc.colno}."
        ) from exc
    moved = 0
    for position, shift in shifts:
        if position + moved >= end:
            break
        moved += shift
    return doc, start + end - moved


def fio_json_documents(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Every fio JSON document in text, in order, and the other lines around them (§2.1, §2.2)."""
    docs: list[dict[str, Any]] = []
    other: list[str] = []
    pos = 0
    while match := _DOC_START.search(text, pos):
        other.append(text[pos : match.start()])
        following = _DOC_START.search(text, match.end())
        limit = following.start() if following else len(text)
        try:
            doc, pos = _decode(text, match.start(), limit)
        except ParseError as exc:
            if not docs or following:
                raise
            # A status stream read while fio is still writing ends in half a document.
            other.append(f"{exc} It was ignored; the summary comes from the document before it.")
            pos = len(text)
            break
        docs.append(doc)
    other.append(text[pos:])
    return docs, [line.strip() for chunk in other for line in chunk.splitlines() if line.strip()]


def _option_bytes(value: str | None, kb_base: int) -> int | None:
    """fio's reading of a size option: with kb_base=1024, k/KB are 1024 and KiB is 1000 (§2.7)."""
    match = re.fullmatch(r"\s*(\d+)\s*([kmgtpe]?)(i?)b?\s*", value or "", re.IGNORECASE)
    if not match:
        return None
    base = kb_base if not match[3] else {1024: 1000, 1000: 1024}.get(kb_base, kb_base)
    return int(match[1]) * base ** "_kmgtpe".index(match[2].lower() or "_")


def _mode_read_percent(rw: str | None, options: dict[str, str] | None) -> float | None:
    """The configured read share; options None means the mix is unknown (the text report omits it)."""
    mode = (rw or "read").split(":")[0]  # fio's default rw is read; "randread:8" carries an offset
    if mode in READ_ONLY_MODES:
        return 100.0
    if mode in WRITE_ONLY_MODES:
        return 0.0
    if mode not in MIXED_MODES or options is None:
        return None
    if "rwmixread" in options:
        return finite(options["rwmixread"])
    if "rwmixwrite" in options:
        write = finite(options["rwmixwrite"])
        return None if write is None else 100.0 - write
    return 50.0


def _json_direction(data: Any) -> DirectionStats | None:
    if not isinstance(data, dict):
        return None
    runtime = finite(data.get("runtime")) or 0.0
    ios = finite(data.get("total_ios"))
    io_bytes = finite(data.get("io_bytes"))
    if io_bytes is not None and "io_kbytes" not in data and "clat_ns" not in data:
        io_bytes *= 1024  # io_bytes held KiB up to fio 2.20 (§1.4)
    if runtime > 0 and ios is not None:
        iops = ios * 1000 / runtime
    else:
        iops = finite(data.get("iops")) or 0.0
    bw = io_bytes * 1000 / runtime if runtime > 0 and io_bytes is not None else 0.0
    stats = DirectionStats(iops, bw, ios if ios is not None else iops * runtime / 1000)
    clat, per_us = data.get("clat_ns"), 1000.0
    if not isinstance(clat, dict):
        clat, per_us = data.get("clat"), 1.0  # fio 2.x: microseconds
    if not isinstance(clat, dict) or not _has_latency(clat):
        return stats
    mean, peak = finite(clat.get("mean")), finite(clat.get("max"))
    stats.clat_mean_us = None if mean is None else mean / per_us
    stats.clat_max_us = None if peak is None else peak / per_us
    for key, value in (clat.get("percentile") or {}).items():
        percent, number = finite(key), finite(value)
        if percent and number is not None:  # skips 2.x's bogus "0.00": 0 (§2.5)
            stats.percentiles_us[percent] = number / per_us
    if per_us != 1.0:
        stats.bins_ns = _bins(clat) or None
    return stats


def _has_latency(clat: dict[str, Any]) -> bool:
    if "N" in clat:
        return (finite(clat["N"]) or 0) > 0
    return bool(finite(clat.get("max")) or finite(clat.get("mean")))


def _bins(clat: dict[str, Any]) -> dict[int, int]:
    bins = clat.get("bins")
    if not isinstance(bins, dict):
        return {}
    return {int(key): int(count) for key, count in bins.items() if str(key).isdigit() and finite(count)}


def latency_bins(doc: dict[str, Any]) -> dict[str, dict[int, int]]:
    """json+ completion-latency histograms of one document: {"read": {ns: count}, "write": ...}, summed
    over its jobs. Directions without bins are left out, so plain json gives {}. (fio 3.x keys only; 2.x
    json+ keyed bins in µs or bucket indices, §1.6.)"""
    result: dict[str, dict[int, int]] = {}
    for job in doc.get("jobs") or []:
        for direction in DIRECTIONS:
            clat = (job.get(direction) or {}).get("clat_ns")
            for value, count in (_bins(clat) if isinstance(clat, dict) else {}).items():
                merged = result.setdefault(direction, {})
                merged[value] = merged.get(value, 0) + count
    return result


def _clock_ms(entries: list[tuple[Any, float]]) -> float:
    """Measured time of (groupid, runtime ms) entries: groups run one after another, jobs in a group together."""
    groups: dict[Any, float] = {}
    for group, runtime in entries:
        groups[group] = max(groups.get(group, 0.0), runtime)
    return sum(groups.values())


def _job_clock_entries(jobs: list[dict[str, Any]]) -> list[tuple[Any, float]]:
    return [
        (job.get("groupid"), finite((job.get(direction) or {}).get("runtime")) or 0.0)
        for job in jobs
        for direction in ("read", "write", "trim", "mixed")
    ]


def _samples(docs: list[dict[str, Any]], wanted: dict[str, bool]) -> list[dict[str, float | None]]:
    """Per-interval IOPS from cumulative status documents: Δtotal_ios ÷ Δruntime (§3)."""
    if len(docs) < 2:
        return []
    points = []
    for doc in docs:
        jobs = doc.get("jobs") or []
        counts = [sum(finite((job.get(d) or {}).get("total_ios")) or 0 for job in jobs) for d in DIRECTIONS]
        points.append((_clock_ms(_job_clock_entries(jobs)), *counts, finite(doc.get("timestamp_ms"))))
    kept: list[tuple[float, float, float]] = []
    previous = None
    for point in points:
        if previous and _counters_restarted(previous, point):
            kept = []  # what came before was ramp_time, which fio leaves out of its statistics
        kept.append(point[:3])
        previous = point
    marks = [(0.0, 0.0, 0.0)]
    for point in kept:
        if point[0] - marks[-1][0] >= MIN_SAMPLE_MS:
            marks.append(point)
        elif len(marks) > 1:
            # The final document often lands milliseconds after the last status one; a rate over so short
            # an interval is noise, so the interval before absorbs it.
            marks[-1] = point
    samples: list[dict[str, float | None]] = []
    for before, after in pairwise(marks):
        elapsed = after[0] - before[0]
        rates = [(after[i] - before[i]) * 1000 / elapsed if wanted[d] else None for i, d in enumerate(DIRECTIONS, 1)]
        samples.append({"t_s": after[0] / 1000, "read_iops": rates[0], "write_iops": rates[1]})
    return samples


def _counters_restarted(before: tuple[Any, ...], after: tuple[Any, ...]) -> bool:
    clock_delta = after[0] - before[0]
    if clock_delta < 0 or after[1] < before[1] or after[2] < before[2]:
        return True
    # fio zeroes its counters when ramp_time ends. The counts may still have grown across the reset, but
    # then the whole new clock fits in the wall time since the previous document while having advanced far
    # less than that wall time.
    if before[3] is None or after[3] is None:
        return False
    wall = after[3] - before[3]
    return wall > 0 and after[0] <= wall + MIN_SAMPLE_MS and clock_delta < wall / 2


def _processes(jobs: list[dict[str, Any]], options: list[dict[str, str]]) -> int | None:
    """One entry is one process, except with group_reporting, where a group's one entry stands for all of
    its members; fio then shows only the first member's numjobs (§1.5)."""
    groups: dict[Any, list[int]] = {}
    for index, job in enumerate(jobs):
        groups.setdefault(job.get("groupid"), []).append(index)
    total = 0
    for members in groups.values():
        if len(members) > 1:
            total += len(members)
        else:
            numjobs = finite(options[members[0]].get("numjobs", "1"))
            if numjobs is None:
                return None
            total += int(numjobs)
    return total


def _errno_messages(lines: list[str]) -> dict[int, str]:
    """errno -> fio's own wording, from lines like "fio: pid=7647, err=28/file:io_u.c:1876, ..., error=No space"."""
    messages: dict[int, str] = {}
    for line in lines:
        match = re.search(r"\berr=\s*(\d+)/.*?\berror=(.+)$", line)
        if match:
            messages.setdefault(int(match[1]), match[2].strip())
    return messages


def parse_fio_json(text: str) -> ParseResult:
    docs, diagnostics = fio_json_documents(text)
    if not docs:
        raise ParseError(
            f"Expected fio JSON output (a '{{' followed by a \"fio version\" key); found none in "
            f"{len(text.splitlines())} lines starting {excerpt(text)}."
        )
    final = docs[-1]
    jobs = final.get("jobs")
    if not isinstance(jobs, list) or not all(isinstance(job, dict) for job in jobs):
        hint = " This is fio client/server output (client_stats), which is not read." if "client_stats" in final else ""
        raise ParseError(f'The last fio JSON document has no "jobs" list.{hint}')
    global_options = final.get("global options") or {}
    options = [{**global_options, **(job.get("job options") or {})} for job in jobs]
    messages = _errno_messages(diagnostics)
    job_errors = [
        {"job": job.get("jobname"), "index": index, "errno": int(errno), "message": messages.get(int(errno))}
        for index, job in enumerate(jobs)
        if (errno := finite(job.get("error")))
    ]
    merged = {d: merge_direction([s for job in jobs if (s := _json_direction(job.get(d)))]) for d in DIRECTIONS}
    total = None
    if not merged["read"] and not merged["write"]:
        # unified_rw_reporting=mixed reports one "mixed" direction instead of read and write.
        mixed = merge_direction([s for job in jobs if (s := _json_direction(job.get("mixed")))])
        if mixed:
            total = {"iops": mixed["iops"], "bw_bytes_per_s": mixed["bw_bytes_per_s"]}

    def agreed(read: Any) -> Any:
        return same_or_none([read(opts) for opts in options])

    kb_base = agreed(lambda o: int(finite(o.get("kb_base")) or 1024))
    block_size = agreed(lambda o: _option_bytes(o.get("bs", o.get("blocksize")), kb_base or 1024))
    if not any(name in opts for opts in options for name in ("bs", "blocksize", "bsrange", "bssplit")):
        block_size = 4096  # fio's default block size when none is set
    direct = agreed(lambda o: o["direct"] not in ("0", "false") if "direct" in o else None)
    summary = make_summary(
        tool="fio",
        tool_version=str(final.get("fio version", "")).removeprefix("fio-") or None,
        read=merged["read"],
        write=merged["write"],
        total=total,
        processes=_processes(jobs, options) if jobs else None,
        block_size_bytes=block_size,
        read_percent=agreed(lambda o: _mode_read_percent(o.get("rw", o.get("readwrite")), o)),
        direct=direct,
        runtime_s=_clock_ms(_job_clock_entries(jobs)) / 1000 if jobs else None,
        samples=_samples(docs, {d: merged[d] is not None for d in DIRECTIONS}),
    )
    settings = {str(k): str(v) for k, v in (options[0] if options else global_options).items()}
    return ParseResult("fio-json", summary, diagnostics, job_errors, settings, latency_bins(final) or None)


# ---------------------------------------------------------------------------------------------------------
# Text report (§4). Everything is matched across whitespace, never by line, so a report pasted from a web
# page with its newlines collapsed into spaces still parses.

_NUM = r"\d+(?:\.\d+)?"
_TEXT_JOB = re.compile(  # "full: (groupid=0, jobs=1): err=28 (file:io_u.c:1876, ..., error=No space left on device)"
    r"(?P<name>\S+): \(groupid=(?P<group>\d+), jobs=(?P<jobs>\d+)\): err=\s*(?P<err>\d+)"
    r"(?: \([^)]*?\berror=(?P<message>[^)]*)\))?"
)
_TEXT_DESC = re.compile(
    r"(?P<name>\S+): \(g=\d+\): rw=(?P<rw>\w+), bs=(?P<bs>.*?), ioengine=(?P<ioengine>[\w:/.-]+), "
    r"iodepth=(?P<iodepth>\d+)"
)
_TEXT_DIR_3 = re.compile(  # 3.x and 2.17+: "read: IOPS=17.0k, BW=66.4MiB/s (69.6MB/s)(199MiB/3001msec)"
    rf"\b(?P<dir>read|write|trim|mixed)\s*:\s*IOPS=(?P<iops>{_NUM}[kMGTPE]?),\s*"
    rf"BW=(?P<bw>{_NUM})(?P<bw_unit>[kKMGTPE]?i?B)/s\s*\([^)]*\)\s*\({_NUM}[kKMGTPE]?i?B/(?P<runtime>\d+)msec\)"
)
_TEXT_DIR_2 = re.compile(  # 2.x: "read : io=323972KB, bw=107955KB/s, iops=26988, runt=  3001msec"
    rf"\b(?P<dir>read|write|trim|mixed)\s*:\s*io=\s*{_NUM}\s*[KMGTPE]?B,\s*bw=\s*(?P<bw>{_NUM})\s*"
    rf"(?P<bw_unit>[KMGTPE]?B)/s,\s*iops=\s*(?P<iops>{_NUM}[kKMGTPE]?)\s*,\s*runt=\s*(?P<runtime>\d+)\s*msec"
)
_TEXT_CLAT = re.compile(
    rf"\bclat \((?P<unit>[num]sec)\)\s*:\s*min=\s*{_NUM}[kKMG]?,\s*max=\s*(?P<max>{_NUM}[kKMG]?),\s*"
    rf"avg=\s*(?P<avg>{_NUM}[kKMG]?)"
)
_TEXT_PERCENTILES = re.compile(r"\bclat percentiles \((?P<unit>[num]sec)\)\s*:")
_TEXT_PERCENTILE = re.compile(rf"[\s|,]*(?P<percent>{_NUM})th=\[\s*(?P<value>{_NUM}[kKMG]?)\s*\]")
_TEXT_ISSUED = re.compile(r"issued rwts\s*:\s*total=(\d+),(\d+),(\d+)|issued\s*:\s*total=r=(\d+)/w=(\d+)/[dt]=(\d+)")
_TEXT_VERSION = re.compile(r"(?<![\w.-])fio-(\d+\.\d+[\w.+-]*)")
_RUN_STATUS = re.compile(r"Run status group \d+")
_PREFIXES = "KMGTPE"
_UNITS_PER_US = {"nsec": 1000.0, "usec": 1.0, "msec": 0.001}


def _count(token: str) -> float:
    """A num2str number: a trailing k/M/G... is a power of 1000 (IOPS, latencies)."""
    if token[-1].isalpha():
        return float(token[:-1]) * 1000 ** (_PREFIXES.index(token[-1].upper()) + 1)
    return float(token)


def _bytes(number: str, unit: str, legacy: bool) -> float:
    """3.x prints KiB (1024) and kB (1000); 2.x's KB and MB were 1024-based (§4)."""
    prefix = unit.rstrip("B").rstrip("i")
    base = 1024 if legacy or unit.endswith("iB") else 1000
    return float(number) * base ** (_PREFIXES.index(prefix.upper()) + 1 if prefix else 0)


def _text_block_size(bs: str) -> int | None:
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
        sizes.add(round(_bytes(match[1], unit if unit.endswith("B") else unit + "B", legacy)))
    return sizes.pop() if len(sizes) == 1 else None


def _text_percentiles(body: str) -> dict[float, float]:
    head = _TEXT_PERCENTILES.search(body)
    if not head:
        return {}
    per_us, pos, result = _UNITS_PER_US[head["unit"]], head.end(), {}
    while match := _TEXT_PERCENTILE.match(body, pos):
        result[float(match["percent"])] = _count(match["value"]) / per_us
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
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
        section = text[header.end() : end]
        if run_status := _RUN_STATUS.search(section):
            section = section[: run_status.start()]
        if int(header["err"]):
            errno = int(header["err"])
            message = header["message"] or messages.get(errno)
            job_errors.append({"job": header["name"], "index": index, "errno": errno, "message": message})
        legacy = not _TEXT_DIR_3.search(section)
        found = list((_TEXT_DIR_2 if legacy else _TEXT_DIR_3).finditer(section))
        issued = _TEXT_ISSUED.search(section)
        counts = [int(n) for n in issued.groups() if n is not None] if issued else []
        for number, match in enumerate(found):
            body = section[match.end() : found[number + 1].start() if number + 1 < len(found) else len(section)]
            runtime = int(match["runtime"])
            clock.append((header["group"], runtime))
            direction = match["dir"]
            ios: float | None = None
            if counts and direction != "trim":
                ios = sum(counts) if direction == "mixed" else counts[DIRECTIONS.index(direction)]
            iops = ios * 1000 / runtime if ios is not None and runtime else _count(match["iops"])
            stats = DirectionStats(iops, _bytes(match["bw"], match["bw_unit"], legacy), ios or iops * runtime / 1000)
            if clat := _TEXT_CLAT.search(body):
                per_us = _UNITS_PER_US[clat["unit"]]
                stats.clat_mean_us, stats.clat_max_us = _count(clat["avg"]) / per_us, _count(clat["max"]) / per_us
            stats.percentiles_us = _text_percentiles(body)
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
        processes=sum(int(header["jobs"]) for header in headers),
        block_size_bytes=same_or_none([_text_block_size(d["bs"]) for d in descriptions]),
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
    value = finite(fields[index].rstrip("%"))
    if value is None:
        raise ParseError(f"line {lineno}: terse field {index + 1} should be a number, not {fields[index]!r}.")
    return value


def _terse_direction(fields: list[str], start: int, lineno: int) -> DirectionStats:
    io_kib, iops, runtime = (_terse_number(fields, start + i, lineno) for i in (0, 2, 3))
    stats = DirectionStats(iops, io_kib * 1024 * 1000 / runtime if runtime else 0.0, iops * runtime / 1000)
    stats.clat_max_us = _terse_number(fields, start + 9, lineno)
    stats.clat_mean_us = _terse_number(fields, start + 10, lineno)
    for field in fields[start + 12 : start + 32]:
        percent, _, value = field.partition("%=")
        if finite(percent) and finite(value) is not None:
            stats.percentiles_us[float(percent)] = float(value)
    return stats


def parse_fio_terse(text: str) -> ParseResult:
    """Terse v3 lines, one per job (or per group with group_reporting); other lines become diagnostics.

    Terse output shows neither numjobs, block size, rw nor direct, so those stay None.
    """
    rows, diagnostics = [], []
    for lineno, line in enumerate(text.splitlines(), 1):
        fields = line.strip().split(";")
        if len(fields) < 3 or not fields[0].isdigit() or not fields[1].startswith("fio-"):
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
