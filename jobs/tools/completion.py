"""Whether a parsed output is a finished measurement, and if not, why, in the tool's own words (pure).

A tool can exit 0 and still print a result with nothing measured: fio that refuses a mounted device prints
"fio: /dev/loop0 appears mounted, and 'allow_mounted_write' isn't set. Aborting.", then a JSON document whose
job has 0 I/Os and a runtime of 0, and exits 0 (tests/fixtures/aborted/). Such a result is no measurement: a
collected run with it fails, and an import of it is refused (jobs/imports/importing.py).

"No I/O" is about the measured job(s) only, as the summary holds them: a preconditioning fill is kept apart in
summary["precondition"] (fio_fill.py), and one direction at 0 (a read-only job's write side) is no problem as
long as another did I/O.
"""

from __future__ import annotations

import re
from typing import Any

from jobs.tools.summary import ParseResult

# fio prefixes what it says about itself with "fio: " (log_err); an abort ends with "Aborting." or "aborting".
_FIO_LINE = re.compile(r"^\s*(fio:\s.*?)\s*$")
_ABORT = re.compile(r"\babort(?:ing|ed)?\b", re.IGNORECASE)
# What a quote of the tool's words is cut to: enough for a few of fio's lines, short enough for an alert.
WORDS_LIMIT = 600


def did_io(summary: dict[str, Any]) -> bool:
    """Whether the result's measured job(s) completed any I/O: a direction with I/O (the parsers leave one with
    none as None), or a total above 0 (fio's unified "mixed" report, ndisk64's totals)."""
    total = summary.get("total") or {}
    return bool(summary.get("read") or summary.get("write") or total.get("iops") or total.get("bw_bytes_per_s"))


def tool_lines(*texts: str) -> list[str]:
    """fio's own lines ("fio: ..."), in order and once each, from the output and the tool's stderr."""
    lines: dict[str, None] = {}
    for text in texts:
        if "fio:" not in text:
            continue  # most outputs: no line of fio's own, and 120 s of status documents are 35,000 lines
        for line in text.splitlines():
            if match := _FIO_LINE.match(line):
                lines.setdefault(match[1])
    return list(lines)


def quoted(lines: list[str]) -> str:
    """The lines as one quote, cut at WORDS_LIMIT characters."""
    text = " / ".join(lines)
    return text if len(text) <= WORDS_LIMIT else text[: WORDS_LIMIT - 3] + "..."


def aborted(lines: list[str]) -> list[str]:
    """The lines in which fio says it aborted ("fio: ... Aborting."); another tool's lines are not read for it."""
    return [line for line in lines if _FIO_LINE.match(line) and _ABORT.search(line)]


def not_measured(parsed: ParseResult, *, tool: str, said: list[str]) -> str | None:
    """Why the parsed result is no measurement, quoting `said` (the tool's own lines); None when it is one.

    fio said it aborted: the run did not go as configured, whatever numbers follow. No I/O on the measured
    job(s): nothing was measured; with a runtime the job ran and completed nothing (a stalled target), without
    one it never started.
    """
    words = quoted(said)
    if stops := aborted(said):
        before = "" if did_io(parsed.summary) else " before any I/O"
        return f"{tool} aborted{before}: {quoted(stops)}"
    if did_io(parsed.summary):
        return None
    runtime = parsed.summary.get("runtime_s")
    if runtime:
        why = f"{tool} ran the measured job for {runtime:g} s and it completed no I/O"
    else:
        why = f"{tool} did no I/O: the measured job never ran (a runtime of 0)"
    return f"{why}; {tool} said: {words}" if words else f"{why}, and {tool} printed no reason"
