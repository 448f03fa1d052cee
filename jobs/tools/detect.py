"""Which tool and format produced a piece of pasted or uploaded output, and its summary (pure: no Django)."""

from __future__ import annotations

import re
from collections.abc import Callable

from jobs.tools import completion
from jobs.tools.fio import (
    fio_json_results,
    fio_terse_results,
    fio_text_results,
    parse_fio_excerpt,
    parse_fio_json,
    parse_fio_terse,
    parse_fio_text,
)
from jobs.tools.ndisk import parse_ndisk
from jobs.tools.summary import ParseError, ParseResult, excerpt

PARSERS: dict[str, Callable[[str], ParseResult]] = {
    "fio-json": parse_fio_json,
    "ndisk64": parse_ndisk,
    "fio-terse": parse_fio_terse,
    "fio-text": parse_fio_text,
    "fio-excerpt": parse_fio_excerpt,
}
# Each format's results, one per group and client (parse_all); a format missing here gives one result.
ALL_PARSERS: dict[str, Callable[[str], list[ParseResult]]] = {
    "fio-json": fio_json_results,
    "fio-terse": fio_terse_results,
    "fio-text": fio_text_results,
}
# Checked in this order: JSON first, because a job's description inside it could look like anything else.
# [^\S\n]* rather than \s* after ^: \s* also crosses newlines, so every line of a long blank stretch would rescan
# the rest of it. [0-9] rather than \d, which also takes other scripts' digits.
_SIGNS = {
    "fio-json": re.compile(r'\{\s*"fio version"\s*:'),
    "ndisk64": re.compile(
        r"^[^\S\n]*TOTALS\s+[0-9]+|^[^\S\n]*Proc\s*-\s*<-+Disk IO|^[^\S\n]*No\. of processes\s*=", re.MULTILINE
    ),
    # Version 2 has no "fio-" field: a "2;" line of at least 86 fields.
    "fio-terse": re.compile(
        r"^[^\S\n]*(?:[0-9]+;(?:fio-[^;\n]*|[0-9]{1,3}\.[0-9]{1,3}(?:\.[0-9]{1,3})?);|2;[^;\n]*;[0-9]+;[0-9]+;(?:[^;\n]*;){80})",
        re.MULTILINE,
    ),
    "fio-text": re.compile(r"\(groupid=[0-9]+, jobs=[0-9]+\): err="),
    "fio-excerpt": re.compile(
        r"\b(?:read|write|trim|mixed)\s*:\s*(?:IOPS=[0-9.]+[kMGTPE]?,\s*BW=|io=\s*[0-9.]+\s*[KMGTPE]?B,\s*bw=)"
    ),
}

_GROUP_STATUS_ONLY = re.compile(r"Run status group [0-9]+ \(all jobs\)")


def detect_format(text: str) -> str:
    """ "fio-json", "ndisk64", "fio-terse", "fio-text" or "fio-excerpt" (a lone summary line); ParseError when
    it is none of them."""
    for name, sign in _SIGNS.items():
        if sign.search(text):
            return name
    if stops := completion.aborted(completion.tool_lines(text)):
        # fio's text report of a run it aborted before starting has no job section, only its group lines.
        raise ParseError(f"fio aborted before any I/O, so this holds no result: {completion.quoted(stops)}")
    if _GROUP_STATUS_ONLY.search(text):
        raise ParseError(
            "This holds only fio's 'Run status group N (all jobs):' lines: they give each group's bandwidth but no "
            "IOPS. Paste the job sections above them too ('name: (groupid=0, jobs=1): err= 0: ...' with its "
            "'read: IOPS=..., BW=...' line), or at least each job's 'read:'/'write:' summary line."
        )
    raise ParseError(
        'This is not output benchweb can read: expected fio JSON (a "fio version" key), fio\'s text report '
        "('name: (groupid=0, jobs=1): err= 0: ...'), fio terse lines ('3;fio-3.33;...'), a fio summary line "
        "('write: IOPS=23.4k, BW=91.6MiB/s (96.0MB/s)(10.0GiB/111824msec)') or an ndisk64 report "
        f"(a 'Proc - <-----Disk IO---->' table); it starts {excerpt(text)}."
    )


# Quote markers people keep when they copy a report from code comments, mail or notebooks: "# ", "#> ", "> ".
_QUOTE = re.compile(r"^[^\S\n]*(#>|#|>)[^\S\n]?", re.MULTILINE)


def unquoted(text: str) -> str:
    """text without the quote marker every one of its non-blank lines starts with (one marker for all), else
    text as it is."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return text
    markers = {match[1] if (match := _QUOTE.match(line)) else None for line in lines}
    if len(markers) != 1 or None in markers:
        return text
    return _QUOTE.sub("", text)


def parse_output(text: str, fmt: str | None = None) -> ParseResult:
    """Parse text as fmt, or as whatever detect_format finds: the one result that stands for the output (what a
    run benchweb launched stores). For an output of several groups that is the first group, for client/server
    output the "All clients" total (fio_common.representative); parse_all gives each. A report quoted line by
    line ("# ", "#> ", "> ") is read without the quote marks."""
    text = unquoted(text)
    fmt = fmt or detect_format(text)
    if fmt not in PARSERS:
        raise ParseError(f"Unknown format {fmt!r}; choose one of {', '.join(PARSERS)}.")
    return PARSERS[fmt](text)


def parse_all(text: str, fmt: str | None = None) -> list[ParseResult]:
    """Every result the output reports, in output order: one for a single job or group_reporting report, one
    per group (stonewall, new_group; never summed), one per client plus "All clients" for fio --client output,
    one with ParseResult.partial set for a summary-line excerpt. Each result's label says which part it is."""
    text = unquoted(text)
    fmt = fmt or detect_format(text)
    if fmt not in PARSERS:
        raise ParseError(f"Unknown format {fmt!r}; choose one of {', '.join(PARSERS)}.")
    if fmt in ALL_PARSERS:
        return ALL_PARSERS[fmt](text)
    return [PARSERS[fmt](text)]
