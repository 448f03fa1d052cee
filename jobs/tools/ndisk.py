"""IBM nstress ndisk64: a profile becomes a command line; its report becomes the canonical summary (pure).

The real output in tests/fixtures/ndisk_4proc_random_direct.txt is the specification; docs/reference/ndisk64-output.md
is general knowledge and loses wherever the two differ.
"""

from __future__ import annotations

import re
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
    """
    settings: dict[str, str] = {}
    rows: list[tuple[int, re.Match[str]]] = []
    totals: list[tuple[int, re.Match[str]]] = []
    marks: list[tuple[int, int]] = []
    diagnostics: list[str] = []
    footer = None
    command: list[str] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        in_header = not rows and not marks
        if line.startswith("Command:"):
            settings["command"] = line.removeprefix("Command:").strip()
            command = settings["command"].split()
        elif match := _BLOCK_MARK.match(line):
            marks.append((lineno, whole(match[1], f"line {lineno}: block Size")))
        elif match := _TOTALS.match(line):
            totals.append((lineno, match))
        elif match := _ROW.match(line):
            rows.append((lineno, match))
        elif match := _FOOTER.match(line):
            footer = match
        elif _NOISE.match(line):
            continue
        elif in_header and "=" in line and not line.startswith("="):
            label, _, value = line.partition("=")
            settings[" ".join(label.lower().split())] = value.strip()
        elif in_header and settings and "title" not in settings:
            settings["title"] = line  # "Synchronous Disk test (regular read/write)"
        else:
            diagnostics.append(line)

    if not rows:
        raise ParseError(
            "Expected ndisk64 process rows like '   1 -    300800   5013.3 |  19.58  20053.28  60.00' "
            f"after its 'Proc - ... RunTime' table header; found none. The output starts {excerpt(text)}."
        )
    if len(marks) > 1:
        raise ParseError(f"line {marks[1][0]}: a second block size; benchweb reads one block size per ndisk64 run.")
    if len(totals) > 1:
        raise ParseError(f"line {totals[1][0]}: a second TOTALS row; expected one per run.")
    numbers = [whole(match[1], f"line {lineno}: process number") for lineno, match in rows]
    if len(set(numbers)) != len(numbers):
        raise ParseError(f"line {rows[-1][0]}: process numbers repeat ({numbers}); expected one row per process.")

    row_iops = sum(real(match[3], f"line {lineno}: IO/sec") for lineno, match in rows)
    row_kib = sum(real(match[5], f"line {lineno}: KB/sec") for lineno, match in rows)
    if totals:
        lineno, match = totals[0]
        iops = real(match[2], f"line {lineno}: TOTALS IO/sec")
        total_kib = real(match[4], f"line {lineno}: TOTALS KB/sec") if match[4] else None
        bw = total_kib * KIB if total_kib is not None else real(match[3], f"line {lineno}: TOTALS MB/sec") * KIB * KIB
        # Each row is rounded to 0.1 IO/s and 0.01 KB/s, so their sum may drift by that much per row.
        if abs(iops - row_iops) > 0.05 * len(rows) + 0.05 or (
            total_kib is not None and abs(total_kib - row_kib) > 0.01 * len(rows)
        ):
            diagnostics.append(
                f"line {lineno}: TOTALS ({iops} IO/s) differs from the sum of the process rows ({row_iops:.1f})."
            )
    else:
        iops, bw = row_iops, row_kib * KIB
        if len(rows) > 1:
            diagnostics.append("No TOTALS row; the total is the sum of the process rows.")

    # Header values are checked with [0-9]: str.isdigit() also takes '²', which int() refuses.
    configured = settings.get("no. of processes", "")
    if re.fullmatch(r"[0-9]{1,20}", configured) and int(configured) != len(rows):
        diagnostics.append(f"{configured} processes were configured but {len(rows)} reported.")

    block_size = settings.get("block size", "")
    if re.fullmatch(r"[0-9]+", block_size):
        block_size_bytes: int | None = whole(block_size, "Block size")
    elif marks:
        block_size_bytes = marks[0][1]
    elif footer:
        block_size_bytes = whole(footer["bs"], "the last line's bs=") * KIB ** "_KMG".index(footer["unit"] or "_")
    else:
        block_size_bytes = None

    if footer:
        read_percent: float | None = real(footer["read"], "the last line's read=")
    else:
        read_percent = _read_percent(settings.get("read-write", ""))
    if read_percent is None and (flag := _flag_value(command, "-r")):
        # ndisk64 refuses -r outside 0-100, so another value is not what ran.
        read_percent = float(flag) if re.fullmatch(r"[0-9]{1,3}", flag) and int(flag) <= 100 else None

    mode = settings.get("file open() mode", "").lower()
    if "direct" in mode or "cio" in mode or "concurrent" in mode:
        direct: bool | None = True  # JFS2 concurrent I/O (-C) bypasses the file cache as O_DIRECT does
    elif "normal" in mode:
        direct = False
    elif command:
        direct = "-D" in command or "-C" in command
    else:
        direct = None

    run_time = re.match(r"[0-9]+", settings.get("run time", ""))
    # The figures as ndisk64 printed them: its TOTALS row, or the only process row.
    shown = totals[0][1] if totals else rows[0][1] if len(rows) == 1 else None
    if shown is None:
        printed = None
    elif totals:
        printed = printed_figures(
            iops=f"{shown[2]} IO/s", bw=shown[4] and f"{shown[4]} KB/s", bw_alt=f"{shown[3]} MB/s"
        )
    else:
        printed = printed_figures(
            iops=f"{shown[3]} IO/s", bw=f"{shown[5]} KB/s", bw_alt=f"{shown[4]} MB/s", runtime=f"{shown[6]} s"
        )
    if printed and "bw" not in printed:
        printed["bw"] = printed.pop("bw_alt")
    io_type = settings.get("i/o type", "").lower()
    pattern = (
        "random" if "random" in io_type or "-R" in command else "sequential" if io_type or "-S" in command else None
    )
    if footer and pattern is None:
        pattern = "random" if "random" in footer[0].lower() else "sequential"
    if block_size := settings.get("block size", ""):
        shown_block_size: str | None = block_size
    elif footer:
        shown_block_size = f"{footer['bs']}{footer['unit']}B"
    else:
        shown_block_size = _flag_value(command, "-b")
    workload = make_workload(
        rw={"random": "randrw", "sequential": "rw"}.get(pattern or "") if read_percent not in (0.0, 100.0) else None,
        block_size=shown_block_size,
        numjobs=len(rows),
        read_percent=read_percent,
    )
    if read_percent == 100.0 or read_percent == 0.0:
        mode = "read" if read_percent else "write"
        workload["rw"] = {"random": f"rand{mode}", "sequential": mode}.get(pattern or "")
    summary = make_summary(
        tool="ndisk64",
        tool_version=None,  # ndisk64 prints no version
        read=None,
        write=None,
        total={"iops": iops, "bw_bytes_per_s": bw},
        processes=len(rows),
        block_size_bytes=block_size_bytes,
        read_percent=read_percent,
        direct=direct,
        runtime_s=max(real(match[6], f"line {lineno}: Seconds") for lineno, match in rows)
        or (real(run_time[0], "Run time") if run_time else None),
        printed={"total": printed},
        workload=workload,
    )
    return ParseResult("ndisk64", summary, diagnostics, [], settings)
