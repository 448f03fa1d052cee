"""A lone summary line quoted from a fio report, with or without the fio command line above it (pure).

People quote fio's result as one line: 3.x "write: IOPS=23.4k, BW=91.6MiB/s (96.0MB/s)(10.0GiB/111824msec)" or
2.x "write: io=10240MB, bw=93768KB/s, iops=23441 , runt=111824msec". Such an excerpt is a partial result
(ParseResult.partial says what it lacks): the figures of the line, and what a command line
(`fio --name=x --rw=write --bs=4k ...`), job-file lines (`rw=write`) or a job description line above it give.
fio rounds a 3.x IOPS to three digits ("23.4k"); when the block size is known, the line's more precise
bandwidth or I/O total over its runtime gives the IOPS more exactly, and a diagnostic shows that division.
"""

from __future__ import annotations

import re
import shlex

from jobs.tools.fio_common import _mode_read_percent, checked_read_percent
from jobs.tools.fio_json import _option_bytes
from jobs.tools.fio_text import (
    _TEXT_CLAT,
    _TEXT_DESC,
    _UNITS_PER_US,
    TEXT_DIR_2,
    TEXT_DIR_3,
    TEXT_VERSION,
    _bytes,
    _count,
    _text_percentiles,
    compact_block_size,
    printed_line,
)
from jobs.tools.summary import (
    DirectionStats,
    ParseError,
    ParseResult,
    excerpt,
    make_summary,
    make_workload,
    merge_direction,
    whole,
)

# The options an excerpt's command line or job-file lines can say, under fio's names and aliases.
_OPTION_NAMES = {
    "rw": "rw",
    "readwrite": "rw",
    "bs": "bs",
    "blocksize": "bs",
    "iodepth": "iodepth",
    "numjobs": "numjobs",
    "rwmixread": "rwmixread",
    "rwmixwrite": "rwmixwrite",
    "ioengine": "ioengine",
    "direct": "direct",
}
_COMMAND = re.compile(r"(?m)^[^\n]{0,200}?(?<![\w/.-])(?:[\w/.-]{0,200}/)?fio[^\S\n]+[^\n]{0,4000}$")
_JOB_LINE = re.compile(r"(?m)^[^\S\n]*(" + "|".join(_OPTION_NAMES) + r")[^\S\n]*=[^\S\n]*([^\s#;]{1,200})[^\S\n]*$")
_DIGITS_AFTER_POINT = re.compile(r"\.([0-9]+)")


def _options(text: str) -> tuple[dict[str, str], str]:
    """The job options the excerpt shows, and where they came from ("the command line", ...)."""
    options: dict[str, str] = {}
    sources = []
    for line in _COMMAND.finditer(text):
        try:
            words = shlex.split(line[0])
        except ValueError:
            words = line[0].split()
        for word in words:
            name, _, value = word.removeprefix("--").partition("=")
            if word.startswith("--") and name in _OPTION_NAMES and value:
                options[_OPTION_NAMES[name]] = value
    if options:
        sources.append("the fio command line")
    found = {_OPTION_NAMES[m[1]]: m[2] for m in _JOB_LINE.finditer(text)}
    if found:
        options = found | options
        sources.append("the job-file lines")
    if description := _TEXT_DESC.search(text):
        options.setdefault("rw", description["rw"])
        options.setdefault("bs", compact_block_size(description["bs"]))
        options.setdefault("ioengine", description["ioengine"])
        options.setdefault("iodepth", description["iodepth"])
        sources.append("the job description line")
    return options, " and ".join(sources)


def _uncertainty(token: str) -> float:
    """Half a unit of the last printed digit, relative to the number: how far fio may have rounded it."""
    number = float(re.sub(r"[^0-9.].*$", "", token) or 0)
    decimals = _DIGITS_AFTER_POINT.search(token)
    step = 10.0 ** -len(decimals[1]) if decimals else 1.0
    return step / 2 / number if number else float("inf")


def _whole(value: str | None) -> int | None:
    return int(value) if value and re.fullmatch(r"[0-9]{1,9}", value) else None


def parse_fio_excerpt(text: str) -> ParseResult:
    legacy = not TEXT_DIR_3.search(text)
    lines = list((TEXT_DIR_2 if legacy else TEXT_DIR_3).finditer(text))
    if not lines:
        raise ParseError(
            "Expected a fio summary line such as 'write: IOPS=23.4k, BW=91.6MiB/s (96.0MB/s)(10.0GiB/111824msec)' "
            "or fio 2.x's 'write: io=10240MB, bw=93768KB/s, iops=23441, runt=111824msec'; found none in "
            f"{excerpt(text)}."
        )
    options, source = _options(text)
    kb_base = 1024
    block_size = _option_bytes(options.get("bs"), kb_base)
    diagnostics: list[str] = []
    stats: dict[str, list[DirectionStats]] = {"read": [], "write": [], "mixed": []}
    printed: dict[str, dict[str, str] | None] = {}
    runtimes = []
    rounded = []
    has_latency = False
    for number, line in enumerate(lines):
        direction = line["dir"]
        where = f"the {direction} line"
        runtime = whole(line["runtime"], f"{where}: runtime")
        runtimes.append(runtime)
        iops = _count(line["iops"], f"{where}: IOPS")
        bw = _bytes(line["bw"], line["bw_unit"], legacy, f"{where}: BW")
        io = _bytes(line["io"], line["io_unit"], legacy, f"{where}: io")
        # The most precise IOPS the line gives: its IOPS figure, or with a known block size its bandwidth or
        # I/O total over its runtime, whichever fio rounded least.
        choices = [(_uncertainty(line["iops"]), iops, "")]
        if block_size and runtime:
            choices.append(
                (
                    _uncertainty(line["bw"]),
                    bw / block_size,
                    f"BW={line['bw']}{line['bw_unit']}{line['per_s'] or ''} ÷ {block_size} B",
                )
            )
            choices.append(
                (
                    _uncertainty(line["io"]),
                    io / block_size * 1000 / runtime,
                    f"{line['io']}{line['io_unit']}B ÷ {block_size} B ÷ {runtime} ms",
                )
            )
        _, best, how = min(choices, key=lambda choice: choice[0])
        if not line["iops"][-1].isdigit() or "." in line["iops"]:
            rounded.append(
                f"{direction} IOPS={line['iops']} is as fio rounded it"
                + ("; the IOPS stored is derived" if how else "")
            )
        if how:
            diagnostics.append(
                f"{direction} IOPS {best:.1f} is {how} (the block size from {source}); fio printed "
                f"IOPS={line['iops']}, rounded."
            )
        part = DirectionStats(best, bw, best * runtime / 1000)
        body = text[line.end() : lines[number + 1].start() if number + 1 < len(lines) else len(text)]
        if clat := _TEXT_CLAT.search(body):
            has_latency = True
            per_us = _UNITS_PER_US[clat["unit"]]
            part.clat_mean_us = _count(clat["avg"], f"{where}: clat avg") / per_us
            part.clat_max_us = _count(clat["max"], f"{where}: clat max") / per_us
            part.percentiles_us = _text_percentiles(body, f"{where}: clat percentile")
        if direction in stats:
            stats[direction].append(part)
            printed[{"mixed": "total"}.get(direction, direction)] = printed_line(line)
    read, write = merge_direction(stats["read"]), merge_direction(stats["write"])
    mixed = merge_direction(stats["mixed"])
    rw = options.get("rw")
    read_percent = checked_read_percent(_mode_read_percent(rw, options) if rw else None, read, write, diagnostics)
    numjobs = _whole(options.get("numjobs"))
    direct = options.get("direct")
    version = TEXT_VERSION.search(text)
    missing = [] if has_latency else ["no latency"]
    if not options:
        missing.append("no job options (rw, block size, iodepth, jobs)")
    partial = f"only fio's summary line{' and ' + source if source else ''}: {', '.join(missing) or 'no more'}"
    if rounded:
        partial += f"; {', '.join(rounded)}"
    summary = make_summary(
        tool="fio",
        tool_version=(version[1] or version[2]) if version else None,
        read=read,
        write=write,
        total=None if read or write or not mixed else {k: mixed[k] for k in ("iops", "bw_bytes_per_s")},
        processes=numjobs,
        block_size_bytes=block_size,
        read_percent=read_percent,
        direct=None if direct is None else direct not in ("0", "false"),
        runtime_s=max(runtimes) / 1000,
        printed=printed,
        workload=make_workload(
            rw=rw,
            block_size=options.get("bs"),
            iodepth=_whole(options.get("iodepth")),
            numjobs=numjobs,
            read_percent=read_percent,
            ioengine=options.get("ioengine"),
        ),
    )
    return ParseResult("fio-excerpt", summary, diagnostics, [], options, partial=partial + ".")
