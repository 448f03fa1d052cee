"""fio: a profile becomes a job file and a command line; fio's output becomes the canonical summary (pure).

The parsers read JSON from fio 2.x and 3.x (one document, or the cumulative stream --status-interval
writes), the normal text report (also when pasted with its newlines collapsed into spaces) and terse v3
lines. /work/shared/docs/fio-reference.md is the specification; section numbers below refer to it.
"""

from __future__ import annotations

import json
import math
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
    amount,
    excerpt,
    finite,
    make_summary,
    merge_direction,
    real,
    same_or_none,
    whole,
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
DIRECTION_KEYS = ("read", "write", "trim", "mixed")
# json+ bin keys are latencies in ns and their values counts of I/Os, both fio uint64 counters (§1.6).
_BIN_KEY = re.compile(r"[0-9]{1,20}")
_UINT64_END = 2**64
_KB_BASES = {"1024": 1024, "1000": 1000}
_ERRNO = re.compile(r"\berr=\s*([0-9]{1,9})/")
_ERROR_MESSAGE = re.compile(r"\berror=(.+)$")


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _decode(text: str, start: int, limit: int) -> tuple[dict[str, Any], int]:
    try:
        return _DECODER.raw_decode(text, start)
    except json.JSONDecodeError:
        pass
    except (ValueError, RecursionError) as exc:
        raise _undecodable(text, start, exc) from exc
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
    except (ValueError, RecursionError) as exc:
        raise _undecodable(text, start, exc) from exc
    moved = 0
    for position, shift in shifts:
        if position + moved >= end:
            break
        moved += shift
    return doc, start + end - moved


def _undecodable(text: str, start: int, exc: Exception) -> ParseError:
    """Valid JSON that json still cannot read: an integer of more than 4300 digits (int() refuses it) or nesting
    deeper than Python's recursion limit. fio prints neither."""
    why = "nests too deeply" if isinstance(exc, RecursionError) else "holds a number too long to read"
    return ParseError(
        f"line {_line_of(text, start)}: the fio JSON document starting here {why}; fio never prints one like it."
    )


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


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    return {str: "a string", list: "an array"}.get(type(value), "an object")


def _object(value: Any, where: str) -> dict[str, Any]:
    """An object fio may leave out: {} when it is missing or null, ParseError when it is anything else."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ParseError(f"{where} should be a JSON object, not {_json_type(value)}.")
    return value


def _options(value: Any, where: str) -> dict[str, str]:
    """ "job options" or "global options": fio prints every option as the string that was typed (§1.2)."""
    options = _object(value, where)
    for name, setting in options.items():
        if not isinstance(setting, str):
            raise ParseError(f"{where}: {excerpt(name, 40)} should be a string, not {_json_type(setting)}.")
    return options


def _checked_jobs(doc: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """doc's jobs, once everything the parser walks through has the shape fio prints.

    An object or list of another type is a ParseError naming its key; one fio may leave out (a direction, the
    options, a percentile map) may be missing or null. Numbers are read with finite()/amount(), so a number
    that is missing, null, nan or not a number is None, never a guess, and a negative one is a ParseError.
    """
    jobs = doc.get("jobs")
    if not isinstance(jobs, list):
        hint = " This is fio client/server output (client_stats), which is not read." if "client_stats" in doc else ""
        raise ParseError(f'{where} has no "jobs" list.{hint}')
    for number, job in enumerate(jobs, 1):
        label = f"{where}, job {number}"
        if not isinstance(job, dict):
            raise ParseError(f"{label} should be a JSON object, not {_json_type(job)}.")
        _options(job.get("job options"), f'{label}: "job options"')
        group = job.get("groupid")
        if group is not None and (isinstance(group, bool) or not isinstance(group, int)):
            raise ParseError(f'{label}: "groupid" should be a whole number, not {_json_type(group)}.')
        for direction in DIRECTION_KEYS:
            data = _object(job.get(direction), f'{label}: "{direction}"')
            for latency in ("clat_ns", "clat"):
                clat = _object(data.get(latency), f'{label}: "{direction}" "{latency}"')
                for key in ("percentile", "bins"):
                    _object(clat.get(key), f'{label}: "{direction}" "{latency}" "{key}"')
    return jobs


def _option_bytes(value: str | None, kb_base: int | None) -> int | None:
    """fio's reading of a size option: with kb_base=1024, k/KB are 1024 and KiB is 1000 (§2.7). None when it
    is not one fixed size (4k,8k or 4k:8k) or longer than any size fio takes."""
    match = re.fullmatch(r"\s*([0-9]{1,20})\s*([kmgtpe]?)(i?)b?\s*", value or "", re.IGNORECASE)
    if not match or kb_base is None:
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
    # fio refuses a mix outside 0-100, so such a value was not what ran: unknown rather than a guess.
    if "rwmixread" in options:
        read = finite(options["rwmixread"])
        return read if read is not None and 0 <= read <= 100 else None
    if "rwmixwrite" in options:
        write = finite(options["rwmixwrite"])
        return 100.0 - write if write is not None and 0 <= write <= 100 else None
    return 50.0


def _json_direction(data: dict[str, Any], where: str) -> DirectionStats | None:
    """One direction of a job whose shape _checked_jobs has checked; None when the job has no such direction."""
    if not data:
        return None
    runtime = amount(data.get("runtime"), f'{where} "runtime"') or 0.0
    ios = amount(data.get("total_ios"), f'{where} "total_ios"')
    io_bytes = amount(data.get("io_bytes"), f'{where} "io_bytes"')
    if io_bytes is not None and "io_kbytes" not in data and "clat_ns" not in data:
        io_bytes *= 1024  # io_bytes held KiB up to fio 2.20 (§1.4)
    if runtime > 0 and ios is not None:
        iops = ios * 1000 / runtime
    else:
        iops = amount(data.get("iops"), f'{where} "iops"') or 0.0
    bw = io_bytes * 1000 / runtime if runtime > 0 and io_bytes is not None else 0.0
    stats = DirectionStats(iops, bw, ios if ios is not None else iops * runtime / 1000)
    clat, per_us, latency = data.get("clat_ns"), 1000.0, "clat_ns"
    if clat is None:
        clat, per_us, latency = data.get("clat"), 1.0, "clat"  # fio 2.x: microseconds
    if not clat or not _has_latency(clat):
        return stats
    where = f'{where} "{latency}"'
    mean, peak = amount(clat.get("mean"), f'{where} "mean"'), amount(clat.get("max"), f'{where} "max"')
    stats.clat_mean_us = None if mean is None else mean / per_us
    stats.clat_max_us = None if peak is None else peak / per_us
    for key, value in (clat.get("percentile") or {}).items():
        percent, number = finite(key), amount(value, f'{where} "percentile" {excerpt(key, 20)}')
        if percent is not None and 0 < percent <= 100 and number is not None:  # skips 2.x's "0.00": 0 (§2.5)
            stats.percentiles_us[percent] = number / per_us
    if per_us != 1.0:
        stats.bins_ns = _bins(clat, where) or None
    return stats


def _has_latency(clat: dict[str, Any]) -> bool:
    if "N" in clat:
        return (finite(clat["N"]) or 0) > 0
    return bool(finite(clat.get("max")) or finite(clat.get("mean")))


def _bins(clat: dict[str, Any], where: str) -> dict[int, int]:
    """json+ bins as {ns: count}; a key or count fio could not have printed is a ParseError."""
    result = {}
    for key, count in (clat.get("bins") or {}).items():
        number = finite(count)
        if (
            not _BIN_KEY.fullmatch(key)
            or int(key) >= _UINT64_END
            or number is None
            or not 0 <= number < _UINT64_END
            or not number.is_integer()
        ):
            raise ParseError(
                f'{where} "bins": {excerpt(key, 30)}: {excerpt(str(count), 30)} should be a latency in ns '
                "mapped to a count of I/Os."
            )
        if number:
            result[int(key)] = int(number)
    return result


def latency_bins(doc: dict[str, Any], where: str = "the fio JSON document") -> dict[str, dict[int, int]]:
    """json+ completion-latency histograms of one document: {"read": {ns: count}, "write": ...}, summed
    over its jobs. Directions without bins are left out, so plain json gives {}. (fio 3.x keys only; 2.x
    json+ keyed bins in µs or bucket indices, §1.6.)"""
    result: dict[str, dict[int, int]] = {}
    for index, job in enumerate(_checked_jobs(doc, where), 1):
        for direction in DIRECTIONS:
            clat = (job.get(direction) or {}).get("clat_ns") or {}
            for value, count in _bins(clat, f'{where}, job {index}: "{direction}" "clat_ns"').items():
                merged = result.setdefault(direction, {})
                merged[value] = merged.get(value, 0) + count
    return result


def _clock_ms(entries: list[tuple[Any, float]]) -> float:
    """Measured time of (groupid, runtime ms) entries: groups run one after another, jobs in a group together."""
    groups: dict[Any, float] = {}
    for group, runtime in entries:
        groups[group] = max(groups.get(group, 0.0), runtime)
    return sum(groups.values())


def _job_clock_entries(jobs: list[dict[str, Any]], where: str) -> list[tuple[Any, float]]:
    return [
        (job.get("groupid"), _job_amount(job, direction, "runtime", f"{where}, job {index}") or 0.0)
        for index, job in enumerate(jobs, 1)
        for direction in DIRECTION_KEYS
    ]


def _job_amount(job: dict[str, Any], direction: str, key: str, where: str) -> float | None:
    return amount((job.get(direction) or {}).get(key), f'{where}: "{direction}" "{key}"')


def _samples(docs: list[dict[str, Any]], labels: list[str], wanted: dict[str, bool]) -> list[dict[str, float | None]]:
    """Per-interval IOPS from cumulative status documents (already checked): Δtotal_ios ÷ Δruntime (§3)."""
    if len(docs) < 2:
        return []
    points = []
    for doc, label in zip(docs, labels, strict=True):
        jobs = doc["jobs"]
        counts = [
            sum(_job_amount(job, d, "total_ios", f"{label}, job {i}") or 0 for i, job in enumerate(jobs, 1))
            for d in DIRECTIONS
        ]
        points.append((_clock_ms(_job_clock_entries(jobs, label)), *counts, finite(doc.get("timestamp_ms"))))
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
            # fio takes a whole numjobs of at least 1; anything else was not what ran, so the count is unknown.
            numjobs = re.fullmatch(r"\s*([0-9]{1,9})\s*", options[members[0]].get("numjobs", "1"))
            if not numjobs or int(numjobs[1]) < 1:
                return None
            total += int(numjobs[1])
    return total


def _errno(job: dict[str, Any], where: str) -> int:
    """The job's errno, 0 when it has none (§2.4)."""
    value = job.get("error")
    number = finite(value)
    if value is not None and (number is None or not number.is_integer() or abs(number) >= 2**31):
        raise ParseError(f'{where}: "error" should be an errno, a whole number, not {excerpt(str(value), 30)}.')
    return int(number or 0)


def _errno_messages(lines: list[str]) -> dict[int, str]:
    """errno -> fio's own wording, from lines like "fio: pid=7647, err=28/file:io_u.c:1876, ..., error=No space"."""
    messages: dict[int, str] = {}
    for line in lines:
        # Two searches, not one "err=.*?error=", which rescans the rest of the line from every "err=".
        errno = _ERRNO.search(line)
        message = _ERROR_MESSAGE.search(line, errno.end()) if errno else None
        if errno and message:
            messages.setdefault(int(errno[1]), message[1].strip())
    return messages


def parse_fio_json(text: str) -> ParseResult:
    docs, diagnostics = fio_json_documents(text)
    if not docs:
        raise ParseError(
            f"Expected fio JSON output (a '{{' followed by a \"fio version\" key); found none in "
            f"{len(text.splitlines())} lines starting {excerpt(text)}."
        )
    labels = [f"fio JSON document {n} of {len(docs)}" for n in range(1, len(docs) + 1)]
    labels[-1] = "the fio JSON document" if len(docs) == 1 else "the last fio JSON document"
    for doc, label in zip(docs[:-1], labels, strict=False):
        _checked_jobs(doc, label)
    final, where = docs[-1], labels[-1]
    jobs = _checked_jobs(final, where)
    global_options = _options(final.get("global options"), f'{where}: "global options"')
    options = [{**global_options, **(job.get("job options") or {})} for job in jobs]
    messages = _errno_messages(diagnostics)
    job_errors = [
        {"job": job.get("jobname"), "index": index, "errno": errno, "message": messages.get(errno)}
        for index, job in enumerate(jobs)
        if (errno := _errno(job, f"{where}, job {index + 1}"))
    ]

    def merged(direction: str) -> dict[str, Any] | None:
        return merge_direction(
            [
                stats
                for index, job in enumerate(jobs, 1)
                if (stats := _json_direction(job.get(direction) or {}, f'{where}, job {index}: "{direction}"'))
            ]
        )

    read, write, total = merged("read"), merged("write"), None
    if not read and not write and (mixed := merged("mixed")):
        # unified_rw_reporting=mixed reports one "mixed" direction instead of read and write.
        total = {"iops": mixed["iops"], "bw_bytes_per_s": mixed["bw_bytes_per_s"]}

    def agreed(pick: Any) -> Any:
        return same_or_none([pick(opts) for opts in options])

    # fio takes only these two kb_base values; under another, what ran is unknown, and so is the size.
    block_size = agreed(
        lambda o: _option_bytes(o.get("bs", o.get("blocksize")), _KB_BASES.get(o.get("kb_base", "1024").strip()))
    )
    if not any(name in opts for opts in options for name in ("bs", "blocksize", "bsrange", "bssplit")):
        block_size = 4096  # fio's default block size when none is set
    direct = agreed(lambda o: o["direct"] not in ("0", "false") if "direct" in o else None)
    summary = make_summary(
        tool="fio",
        tool_version=str(final.get("fio version", "")).removeprefix("fio-") or None,
        read=read,
        write=write,
        total=total,
        processes=_processes(jobs, options) if jobs else None,
        block_size_bytes=block_size,
        read_percent=agreed(lambda o: _mode_read_percent(o.get("rw", o.get("readwrite")), o)),
        direct=direct,
        runtime_s=_clock_ms(_job_clock_entries(jobs, where)) / 1000 if jobs else None,
        samples=_samples(docs, labels, {"read": read is not None, "write": write is not None}),
    )
    settings = dict(options[0] if options else global_options)
    return ParseResult("fio-json", summary, diagnostics, job_errors, settings, latency_bins(final, where) or None)


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
