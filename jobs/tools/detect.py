"""Which tool and format produced a piece of pasted or uploaded output, and its summary (pure: no Django)."""

from __future__ import annotations

import re
from collections.abc import Callable

from jobs.tools.fio import parse_fio_json, parse_fio_terse, parse_fio_text
from jobs.tools.ndisk import parse_ndisk
from jobs.tools.summary import ParseError, ParseResult, excerpt

PARSERS: dict[str, Callable[[str], ParseResult]] = {
    "fio-json": parse_fio_json,
    "ndisk64": parse_ndisk,
    "fio-terse": parse_fio_terse,
    "fio-text": parse_fio_text,
}
# Checked in this order: JSON first, because a job's description inside it could look like anything else.
# [^\S\n]* rather than \s* after ^: \s* also crosses newlines, so every line of a long blank stretch would rescan
# the rest of it. [0-9] rather than \d, which also takes other scripts' digits.
_SIGNS = {
    "fio-json": re.compile(r'\{\s*"fio version"\s*:'),
    "ndisk64": re.compile(
        r"^[^\S\n]*TOTALS\s+[0-9]+|^[^\S\n]*Proc\s*-\s*<-+Disk IO|^[^\S\n]*No\. of processes\s*=", re.MULTILINE
    ),
    "fio-terse": re.compile(r"^[^\S\n]*[0-9]+;fio-[^;]*;", re.MULTILINE),
    "fio-text": re.compile(r"\(groupid=[0-9]+, jobs=[0-9]+\): err="),
}


def detect_format(text: str) -> str:
    """ "fio-json", "ndisk64", "fio-terse" or "fio-text"; ParseError when it is none of them."""
    for name, sign in _SIGNS.items():
        if sign.search(text):
            return name
    raise ParseError(
        'This is not output benchweb can read: expected fio JSON (a "fio version" key), fio\'s text report '
        "('name: (groupid=0, jobs=1): err= 0: ...'), fio terse lines ('3;fio-3.33;...') or an ndisk64 report "
        f"(a 'Proc - <-----Disk IO---->' table); it starts {excerpt(text)}."
    )


def parse_output(text: str, fmt: str | None = None) -> ParseResult:
    """Parse text as fmt, or as whatever detect_format finds."""
    fmt = fmt or detect_format(text)
    if fmt not in PARSERS:
        raise ParseError(f"Unknown format {fmt!r}; choose one of {', '.join(PARSERS)}.")
    return PARSERS[fmt](text)
