"""IBM nstress ndisk64: a profile becomes a command line; its report becomes the canonical summary (pure).

The real output in tests/fixtures/ndisk_4proc_random_direct.txt is the specification; docs/reference/ndisk64-output.md
is general knowledge and loses wherever the two differ.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from jobs.tools.options import ToolOptionError, bool_param, int_param, run_id_of, safe_path
from jobs.tools.summary import (
    ParseError,
    ParseResult,
    excerpt,
    make_summary,
    make_workload,
    printed_figures,
    real,
    whole,
)

PATTERNS = {"random": "-R", "sequential": "-S"}


def _size(n: int) -> str:
    """ndisk64 sizes take K/M/G suffixes (1024-based); anything else is sent in bytes."""
    for suffix, unit in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n % unit == 0:
            return f"{n // unit}{suffix}"
    return str(n)


def build_ndisk_argv(params: dict[str, Any], target_path: str, target_kind: str, run_dir: str) -> list[str]:
    """`ndisk64 -R|-S -r PCT -M PROCS -b BS -s SIZE -t SECS [-D] -f FILE...` for one run on one target.

    A directory gets one file per process, named after the run. The files follow -f as separate arguments,
    the way the real run in the fixture was invoked, and -f comes last so every other flag is read first.
    """
    if params.get("tool") != "ndisk64":
        raise ToolOptionError("tool", f"build_ndisk_argv needs an ndisk64 profile, not {params.get('tool')!r}.")
    pattern = params.get("pattern")
    if pattern not in PATTERNS:
        raise ToolOptionError("pattern", f"pattern must be random or sequential; got {pattern!r}.")
    if params.get("size_bytes") is None:
        raise ToolOptionError(
            "size_bytes", "Give a size: ndisk64 needs one per file (-s), and on a device it has no default."
        )
    processes = int_param(params, "jobs", 1)
    target = safe_path(target_path)
    if "," in target or "+" in target:
        raise ToolOptionError("target_path", f"{target!r}: ndisk64 splits file lists at ',' and '+'.")
    if target_kind == "directory":
        run_id = run_id_of(run_dir)
        files = [f"{target.rstrip('/')}/benchweb-{run_id}-{n}" for n in range(1, processes + 1)]
    elif target_kind == "block":
        files = [target]
    else:
        raise ToolOptionError("target_kind", f"target_kind must be 'directory' or 'block', not {target_kind!r}.")
    argv = [
        "ndisk64",
        PATTERNS[pattern],
        "-r",
        str(int_param(params, "read_percent", 0, 100)),
        "-M",
        str(processes),
        "-b",
        _size(int_param(params, "block_size_bytes", 1)),
        "-s",
        _size(int_param(params, "size_bytes", 1)),
        "-t",
        str(int_param(params, "runtime_s", 1)),
    ]
    if bool_param(params, "direct"):
        argv.append("-D")
    return [*argv, "-f", *files]


# A number as ndisk64 prints it (%d or %.2f): ASCII digits, at most one point. \d would also take other
# scripts' digits, and [\d.]+ took '1.2.3'.
_NUM = r"[0-9]+(?:\.[0-9]+)?"
# "   1 -    300800   5013.3 |     19.58     20053.28  60.00": process, I/Os, IO/sec | MB/sec, KB/sec, seconds
_ROW = re.compile(rf"([0-9]+)\s*-\s*([0-9]+)\s+({_NUM})\s*\|\s*({_NUM})\s+({_NUM})\s+({_NUM})")
# "TOTALS   1201798  20030.0 |     78.24     80119.94": I/Os, IO/sec | MB/sec[, KB/sec]
_TOTALS = re.compile(rf"TOTALS\s+([0-9]+)\s+({_NUM})\s*\|\s*({_NUM})(?:\s+({_NUM}))?")
# "- Random procs=  4 read= 50% bs=  4KB"
_FOOTER = re.compile(
    r"-\s*\w+\s+procs=\s*[0-9]+\s+read=\s*(?P<read>[0-9]+)%\s+bs=\s*(?P<bs>[0-9]+)\s*(?P<unit>[KMG]?)B"
)
_BLOCK_MARK = re.compile(r"-+>\s*Running test with block Size=([0-9]+)")
_NOISE = re.compile(r"(start|stop)\s+randomise|Proc\s*-|Num\s*-")
KIB = 1024


def _read_percent(words: str) -> float | None:
    """The Read-Write header in words ("Equal read and write") or as a ratio ("80:20")."""
    words = words.lower()
    if "equal" in words:
        return 50.0
    # The lookbehinds start a number only where its digits start: a long run of digits is not retried from
    # each of them.
    if ratio := re.search(r"(?<![0-9])([0-9]+)\s*:\s*([0-9]+)", words):
        reads, writes = whole(ratio[1], "Read-Write"), whole(ratio[2], "Read-Write")
        return 100.0 * reads / (reads + writes) if reads + writes else None
    if percent := re.search(rf"(?<![0-9.])({_NUM})\s*%\s*read", words):
        return real(percent[1], "Read-Write")
    if re.search(r"\bread only\b|\bonly read", words):
        return 100.0
    if re.search(r"\bwrite only\b|\bonly write", words):
        return 0.0
    return None


def _flag_value(command: list[str], flag: str) -> str | None:
    return command[command.index(flag) + 1] if flag in command[:-1] else None


def parse_ndisk(text: str) -> ParseResult:
    """The report of one ndisk64 run. It counts as a success only if it holds process rows: ndisk64's exit
    status says nothing (nstress tools exit 1 even on success,
    docs/reference/ndisk64-output.md#success-and-exit-status).

    ndisk64 reports only totals, so read and write stay None instead of being split by the configured ratio:
    reads and writes do not run at the same speed, so the split of I/Os is not the split of time.

    The steps: sort the lines (_read_lines), refuse a report benchweb cannot read as one run (_check_shape), then
    take each figure from where ndisk64 states it best: the header, else the block mark or the last line, else
    the command line.
    """
    report = _read_lines(text)
    _check_shape(report, text)
    iops, bw = _throughput(report)
    _check_process_count(report)
    block_size_bytes = _block_size_bytes(report)
    read_percent = _read_percent_of(report)
    direct = _direct(report)
    printed = _printed(report)
    workload = _workload(report, read_percent)
    runtime_s = _runtime_s(report)
    summary = make_summary(
        tool="ndisk64",
        tool_version=None,  # ndisk64 prints no version
        read=None,
        write=None,
        total={"iops": iops, "bw_bytes_per_s": bw},
        processes=len(report.rows),
        block_size_bytes=block_size_bytes,
        read_percent=read_percent,
        direct=direct,
        runtime_s=runtime_s,
        printed={"total": printed},
        workload=workload,
    )
    return ParseResult("ndisk64", summary, report.diagnostics, [], report.settings)


@dataclass
class _Report:
    """The lines of one report, sorted by what they are; each numbered line keeps its number for messages."""

    settings: dict[str, str] = field(default_factory=dict)  # the header's "label = value" lines, labels lowered
    rows: list[tuple[int, re.Match[str]]] = field(default_factory=list)  # one per process
    totals: list[tuple[int, re.Match[str]]] = field(default_factory=list)
    marks: list[tuple[int, int]] = field(default_factory=list)  # "Running test with block Size=N": (line, N)
    diagnostics: list[str] = field(default_factory=list)  # lines not understood, and doubts about the figures
    footer: re.Match[str] | None = None  # "- Random procs=  4 read= 50% bs=  4KB"
    command: list[str] = field(default_factory=list)  # the "Command:" line's words


def _read_lines(text: str) -> _Report:
    report = _Report()
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line:
            _read_line(report, lineno, line)
    return report


def _read_line(report: _Report, lineno: int, line: str) -> None:
    settings = report.settings
    in_header = not report.rows and not report.marks
    if line.startswith("Command:"):
        settings["command"] = line.removeprefix("Command:").strip()
        report.command = settings["command"].split()
    elif match := _BLOCK_MARK.match(line):
        report.marks.append((lineno, whole(match[1], f"line {lineno}: block Size")))
    elif match := _TOTALS.match(line):
        report.totals.append((lineno, match))
    elif match := _ROW.match(line):
        report.rows.append((lineno, match))
    elif match := _FOOTER.match(line):
        report.footer = match
    elif _NOISE.match(line):
        return
    elif in_header and "=" in line and not line.startswith("="):
        label, _, value = line.partition("=")
        settings[" ".join(label.lower().split())] = value.strip()
    elif in_header and settings and "title" not in settings:
        settings["title"] = line  # "Synchronous Disk test (regular read/write)"
    else:
        report.diagnostics.append(line)


def _check_shape(report: _Report, text: str) -> None:
    """One run's report: process rows, one row per process, at most one block size and one TOTALS row."""
    rows = report.rows
    if not rows:
        raise ParseError(
            "Expected ndisk64 process rows like '   1 -    300800   5013.3 |  19.58  20053.28  60.00' "
            f"after its 'Proc - ... RunTime' table header; found none. The output starts {excerpt(text)}."
        )
    if len(report.marks) > 1:
        raise ParseError(
            f"line {report.marks[1][0]}: a second block size; benchweb reads one block size per ndisk64 run."
        )
    if len(report.totals) > 1:
        raise ParseError(f"line {report.totals[1][0]}: a second TOTALS row; expected one per run.")
    numbers = [whole(match[1], f"line {lineno}: process number") for lineno, match in rows]
    if len(set(numbers)) != len(numbers):
        raise ParseError(f"line {rows[-1][0]}: process numbers repeat ({numbers}); expected one row per process.")


def _throughput(report: _Report) -> tuple[float, float]:
    """(IO/s, bytes/s): the TOTALS row's, noted when the process rows do not add up to it; else their sum."""
    rows = report.rows
    row_iops = sum(real(match[3], f"line {lineno}: IO/sec") for lineno, match in rows)
    row_kib = sum(real(match[5], f"line {lineno}: KB/sec") for lineno, match in rows)
    if not report.totals:
        if len(rows) > 1:
            report.diagnostics.append("No TOTALS row; the total is the sum of the process rows.")
        return row_iops, row_kib * KIB
    lineno, match = report.totals[0]
    iops = real(match[2], f"line {lineno}: TOTALS IO/sec")
    total_kib = real(match[4], f"line {lineno}: TOTALS KB/sec") if match[4] else None
    bw = total_kib * KIB if total_kib is not None else real(match[3], f"line {lineno}: TOTALS MB/sec") * KIB * KIB
    # Each row is rounded to 0.1 IO/s and 0.01 KB/s, so their sum may drift by that much per row.
    if abs(iops - row_iops) > 0.05 * len(rows) + 0.05 or (
        total_kib is not None and abs(total_kib - row_kib) > 0.01 * len(rows)
    ):
        report.diagnostics.append(
            f"line {lineno}: TOTALS ({iops} IO/s) differs from the sum of the process rows ({row_iops:.1f})."
        )
    return iops, bw


def _check_process_count(report: _Report) -> None:
    # Header values are checked with [0-9]: str.isdigit() also takes '²', which int() refuses.
    configured = report.settings.get("no. of processes", "")
    if re.fullmatch(r"[0-9]{1,20}", configured) and int(configured) != len(report.rows):
        report.diagnostics.append(f"{configured} processes were configured but {len(report.rows)} reported.")


def _block_size_bytes(report: _Report) -> int | None:
    """From the header's Block size, else the block mark, else the last line's bs=."""
    block_size = report.settings.get("block size", "")
    footer = report.footer
    if re.fullmatch(r"[0-9]+", block_size):
        return whole(block_size, "Block size")
    if report.marks:
        return report.marks[0][1]
    if footer:
        unit: int = KIB ** "_KMG".index(footer["unit"] or "_")
        return whole(footer["bs"], "the last line's bs=") * unit
    return None


def _read_percent_of(report: _Report) -> float | None:
    """From the last line's read=, else the header's Read-Write, else the command's -r."""
    if report.footer:
        read_percent: float | None = real(report.footer["read"], "the last line's read=")
    else:
        read_percent = _read_percent(report.settings.get("read-write", ""))
    if read_percent is None and (flag := _flag_value(report.command, "-r")):
        # ndisk64 refuses -r outside 0-100, so another value is not what ran.
        read_percent = float(flag) if re.fullmatch(r"[0-9]{1,3}", flag) and int(flag) <= 100 else None
    return read_percent


def _direct(report: _Report) -> bool | None:
    """From the header's File open() mode, else the command's -D or -C."""
    mode = report.settings.get("file open() mode", "").lower()
    if "direct" in mode or "cio" in mode or "concurrent" in mode:
        return True  # JFS2 concurrent I/O (-C) bypasses the file cache as O_DIRECT does
    if "normal" in mode:
        return False
    if report.command:
        return "-D" in report.command or "-C" in report.command
    return None


def _printed(report: _Report) -> dict[str, str] | None:
    """The figures as ndisk64 printed them: its TOTALS row, or the only process row."""
    if report.totals:
        shown = report.totals[0][1]
        printed = printed_figures(
            iops=f"{shown[2]} IO/s", bw=shown[4] and f"{shown[4]} KB/s", bw_alt=f"{shown[3]} MB/s"
        )
    elif len(report.rows) == 1:
        shown = report.rows[0][1]
        printed = printed_figures(
            iops=f"{shown[3]} IO/s", bw=f"{shown[5]} KB/s", bw_alt=f"{shown[4]} MB/s", runtime=f"{shown[6]} s"
        )
    else:
        return None
    if printed and "bw" not in printed:
        printed["bw"] = printed.pop("bw_alt")
    return printed


def _runtime_s(report: _Report) -> float | None:
    """The longest process row's seconds, else (all of them 0) the header's Run time."""
    run_time = re.match(r"[0-9]+", report.settings.get("run time", ""))
    return max(real(match[6], f"line {lineno}: Seconds") for lineno, match in report.rows) or (
        real(run_time[0], "Run time") if run_time else None
    )


def _pattern(report: _Report) -> str | None:
    """random or sequential: from the header's I/O type, else the command's -R or -S, else the last line."""
    io_type = report.settings.get("i/o type", "").lower()
    command = report.command
    pattern = (
        "random" if "random" in io_type or "-R" in command else "sequential" if io_type or "-S" in command else None
    )
    if report.footer and pattern is None:
        pattern = "random" if "random" in report.footer[0].lower() else "sequential"
    return pattern


def _workload(report: _Report, read_percent: float | None) -> dict[str, Any]:
    """The workload in fio's words (rw, block size, jobs, read share), as the fio parser describes a run."""
    pattern = _pattern(report)
    if block_size := report.settings.get("block size", ""):
        shown_block_size: str | None = block_size
    elif report.footer:
        shown_block_size = f"{report.footer['bs']}{report.footer['unit']}B"
    else:
        shown_block_size = _flag_value(report.command, "-b")
    workload = make_workload(
        rw={"random": "randrw", "sequential": "rw"}.get(pattern or "") if read_percent not in (0.0, 100.0) else None,
        block_size=shown_block_size,
        numjobs=len(report.rows),
        read_percent=read_percent,
    )
    if read_percent == 100.0 or read_percent == 0.0:
        mode = "read" if read_percent else "write"
        workload["rw"] = {"random": f"rand{mode}", "sequential": mode}.get(pattern or "")
    return workload
