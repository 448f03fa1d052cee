"""Properties of the tool layer on generated input: the parsers refuse cleanly, job files stay plain INI and
command lines survive the shell, and the safety probe runs nothing a target path asks for.

A parser bug these properties find goes into KNOWN_BUGS, with its minimal input as a strict xfail in
MINIMAL_INPUTS: the properties then let through examples that only reproduce it, so they keep looking for
new ones. Fixing it: delete its KNOWN_BUGS entry and its mark; the minimal input stays as a regression test.
"""

from __future__ import annotations

import json
import math
import re
import shlex
import string
import subprocess
import tempfile
import time
import traceback
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

from jobs import safety
from jobs.tools import fio, ndisk
from jobs.tools.detect import parse_output
from jobs.tools.options import (
    EXTRA_OPTIONS,
    FORBIDDEN_OPTIONS,
    FORBIDDEN_SUFFIXES,
    IOENGINES,
    SAFE_PATH,
    ToolOptionError,
    check_extra_options,
)
from jobs.tools.summary import ParseError, ParseResult

# Bounded so the whole module runs in seconds; no example database, so a run leaves no files behind.
FAST = settings(max_examples=100, deadline=None, database=None)
FUZZ = settings(max_examples=150, deadline=None, database=None)

FIXTURES = Path(__file__).parent.parent / "fixtures"
FIXTURE_TEXTS = {
    f"{p.parent.name}/{p.name}" if p.parent != FIXTURES else p.name: p.read_text()
    for p in sorted([*FIXTURES.iterdir(), *(FIXTURES / "real").iterdir()])
    if p.suffix in (".json", ".txt", ".terse")
}
TOOLS_DIR = Path(fio.__file__).parent

Parser = Callable[[str], ParseResult]
PARSERS: tuple[Parser, ...] = (
    fio.parse_fio_json,
    fio.parse_fio_text,
    fio.parse_fio_terse,
    fio.parse_fio_excerpt,
    ndisk.parse_ndisk,
    parse_output,
)


# --- the parser contract -----------------------------------------------------------------------------------

SUMMARY_KEYS = [
    "tool",
    "tool_version",
    "total",
    "read",
    "write",
    "processes",
    "block_size_bytes",
    "read_percent",
    "direct",
    "runtime_s",
    "samples",
    "printed",
    "workload",
    "cpu",
    "cpu_us_per_io",
    "disk_util",
]
CPU_KEYS = ["usr_percent", "sys_percent", "ctx", "majf", "minf", "job_runtime_ms"]
DISK_COUNTS = ["ios", "sectors", "merges", "ticks"]
DISK_KEYS = {
    "name", "host", "in_queue", "util_percent", "aggr_in_queue", "aggr_util_percent",
    *(f"{prefix}{side}_{count}" for prefix in ("", "aggr_") for side in ("read", "write") for count in DISK_COUNTS),
}  # fmt: skip
WORKLOAD_KEYS = ["rw", "block_size", "iodepth", "numjobs", "read_percent", "ioengine"]


def summary_problems(summary: dict[str, Any]) -> Iterator[str]:
    if list(summary) != SUMMARY_KEYS:
        yield f"summary keys are {list(summary)}"
        return
    if summary["tool"] not in ("fio", "ndisk64"):
        yield f"summary['tool'] = {summary['tool']!r}"
    if not isinstance(summary["tool_version"], str | None):
        yield f"summary['tool_version'] is a {type(summary['tool_version']).__name__}"
    if not isinstance(summary["total"], dict) or set(summary["total"]) != {"iops", "bw_bytes_per_s"}:
        yield f"summary['total'] = {summary['total']!r}"
    for direction in ("read", "write"):
        stats = summary[direction]
        if stats is not None and (not isinstance(stats, dict) or set(stats) != {"iops", "bw_bytes_per_s", "clat_us"}):
            yield f"summary[{direction!r}] = {stats!r}"
    for key in ("processes", "block_size_bytes"):
        if summary[key] is not None and (isinstance(summary[key], bool) or not isinstance(summary[key], int)):
            yield f"summary[{key!r}] = {summary[key]!r}, not a whole number"
    if summary["direct"] is not None and not isinstance(summary["direct"], bool):
        yield f"summary['direct'] = {summary['direct']!r}"
    if not isinstance(summary["samples"], list) or not all(isinstance(s, dict) for s in summary["samples"]):
        yield f"summary['samples'] = {summary['samples']!r}"
    printed = summary["printed"]
    if not isinstance(printed, dict) or list(printed) != ["read", "write", "total", "cpu", "disk_util"]:
        yield f"summary['printed'] = {printed!r}"
    elif not all(
        figures is None
        or (isinstance(figures, dict) and figures and all(isinstance(v, str) and v for v in figures.values()))
        for figures in [*list(printed.values())[:4], *printed["disk_util"]]
    ):
        yield f"summary['printed'] holds something other than the strings printed: {printed!r}"
    workload = summary["workload"]
    if not isinstance(workload, dict) or list(workload) != WORKLOAD_KEYS:
        yield f"summary['workload'] = {workload!r}"
    elif any(workload[k] is not None and not isinstance(workload[k], str) for k in ("rw", "block_size", "ioengine")):
        yield f"summary['workload'] has a setting that is not a string: {workload!r}"
    yield from own_view_problems(summary)
    yield from number_problems(summary, "summary")


def own_view_problems(summary: dict[str, Any]) -> Iterator[str]:
    """fio's cpu line and disk util lines: the documented keys, counts as whole numbers."""
    cpu = summary["cpu"]
    if cpu is not None and (not isinstance(cpu, dict) or list(cpu) != CPU_KEYS):
        yield f"summary['cpu'] = {cpu!r}"
    elif cpu is not None and any(cpu[k] is not None and not isinstance(cpu[k], int) for k in ("ctx", "majf", "minf")):
        yield f"summary['cpu'] has a count that is not a whole number: {cpu!r}"
    if summary["cpu_us_per_io"] is not None and not isinstance(summary["cpu_us_per_io"], float):
        yield f"summary['cpu_us_per_io'] = {summary['cpu_us_per_io']!r}"
    disks = summary["disk_util"]
    if not isinstance(disks, list) or not all(
        isinstance(d, dict) and "name" in d and set(d) <= DISK_KEYS for d in disks
    ):
        yield f"summary['disk_util'] = {disks!r}"
    elif len(disks) != len(summary["printed"]["disk_util"]):
        yield "summary['printed']['disk_util'] does not have one entry per disk"


def number_problems(value: Any, where: str) -> Iterator[str]:
    """Every number anywhere in the summary is finite and not negative."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from number_problems(item, f"{where}[{key!r}]")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from number_problems(item, f"{where}[{index}]")
    elif value is None or isinstance(value, bool | str):
        return
    elif isinstance(value, int):
        if value < 0:
            yield f"{where} = {value!r}"
    elif isinstance(value, float):
        if not math.isfinite(value) or value < 0:
            yield f"{where} = {value!r}"
    else:
        yield f"{where} is a {type(value).__name__}"


def raised_in(exc: BaseException) -> str:
    """The innermost jobs/tools function the exception came through, comprehensions counted as their function."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if Path(f.filename).parent == TOOLS_DIR and not f.name.startswith("<")
    ]
    return f"{Path(frames[-1].filename).stem}.{frames[-1].name}" if frames else "?"


def contract_violation(parse: Parser, text: str) -> str | None:
    """None when parse returns a well-formed summary or raises ParseError; otherwise what went wrong."""
    try:
        result = parse(text)
    except ParseError:
        return None
    except Exception as exc:  # the property is that nothing but ParseError escapes, RecursionError included
        return f"{parse.__name__}: {type(exc).__name__} in {raised_in(exc)}: {str(exc)[:120]}"
    if not isinstance(result, ParseResult):
        return f"{parse.__name__}: returned a {type(result).__name__}"
    problem = next(summary_problems(result.summary), None)
    return None if problem is None else f"{parse.__name__} ({result.format}): {problem}"


# Violations already reported, matched against contract_violation's text (name -> regex); none open now.
# parse_output reaches the same code as the parser it picks, so a pattern should cover it too.
KNOWN_BUGS: dict[str, str] = {}


def known_bug(violation: str) -> str | None:
    return next((name for name, pattern in KNOWN_BUGS.items() if re.match(pattern, violation)), None)


def assert_every_parser_keeps_the_contract(text: str) -> None:
    unknown = []
    for parse in PARSERS:
        violation = contract_violation(parse, text)
        if violation is None:
            continue
        bug = known_bug(violation)
        if bug:
            event(f"known parser bug: {bug}")
        else:
            unknown.append(violation)
    assert not unknown, "\n".join(unknown)


# --- generated parser input ------------------------------------------------------------------------------

# Numbers as they should not look: what a stray keystroke, a bad paste or another locale makes of them. No
# 4301-digit number: the int-digit-limit examples below cover it, and it would only slow every example down.
ODD_NUMBERS = ["1.2.3", ".", "²", "٣", "-1", "-0.5", "1e999", "nan", "inf", "0", "00", "4KiB", "9" * 400]
FORMAT_CHARS = '0123456789.-;:,{}[]"\n |=%kKMiBe/()'
short_number_tokens = st.one_of(
    st.integers(0, 10**7).map(str), st.from_regex(r"[0-9.]{1,6}", fullmatch=True), st.sampled_from(ODD_NUMBERS[:-1])
)
number_tokens = short_number_tokens | st.just(ODD_NUMBERS[-1])
inserted_text = st.text(st.one_of(st.sampled_from(FORMAT_CHARS), st.characters()), min_size=1, max_size=3)


def _index(draw: st.DrawFn, text: str) -> int:
    return draw(st.integers(0, len(text)))


def truncate(draw: st.DrawFn, text: str) -> str:
    return text[: _index(draw, text)]


def cut_a_slice(draw: st.DrawFn, text: str) -> str:
    start = _index(draw, text)
    return text[start : draw(st.integers(start, len(text)))]


def insert_characters(draw: st.DrawFn, text: str) -> str:
    at = _index(draw, text)
    return text[:at] + draw(inserted_text) + text[at:]


def delete_characters(draw: st.DrawFn, text: str) -> str:
    start = _index(draw, text)
    return text[:start] + text[draw(st.integers(start, min(len(text), start + 20))) :]


def duplicate_a_span(draw: st.DrawFn, text: str) -> str:
    start = _index(draw, text)
    span = text[start : draw(st.integers(start, min(len(text), start + 300)))]
    at = _index(draw, text)
    return text[:at] + span + text[at:]


def collapse_newlines(draw: st.DrawFn, text: str) -> str:
    way = draw(st.sampled_from(["split", "space", "crlf", "none"]))
    return {
        "split": lambda: " ".join(text.split()),
        "space": lambda: text.replace("\n", " "),
        "crlf": lambda: text.replace("\n", "\r\n"),
        "none": lambda: text.replace("\n", ""),
    }[way]()


def replace_a_number(draw: st.DrawFn, text: str) -> str:
    numbers = list(re.finditer(r"\d+(?:\.\d+)?", text))
    if not numbers:
        return text
    match = numbers[draw(st.integers(0, len(numbers) - 1))]
    return text[: match.start()] + draw(number_tokens) + text[match.end() :]


MUTATIONS = [
    truncate,
    cut_a_slice,
    insert_characters,
    delete_characters,
    duplicate_a_span,
    collapse_newlines,
    replace_a_number,
]


@st.composite
def mutated_fixtures(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(sorted(FIXTURE_TEXTS)))
    text = FIXTURE_TEXTS[name]
    for mutation in draw(st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=3)):
        text = mutation(draw, text)
    note(f"mutated {name}")
    return text


# One line of each shape the parsers look for, with numbers drawn from number_tokens.
LINE_TEMPLATES = [
    "{} - {} {} | {} {} {}",
    "TOTALS {} {} | {} {}",
    "TOTALS {} {} | {}",
    "No. of processes = {}",
    "Block size = {}",
    "Read-Write = {}:{}",
    "Run time = {} seconds",
    "Command: ndisk64 -r {} -M {} -D",
    "----> Running test with block Size={} ({}KB) ....",
    "- Random procs= {} read= {}% bs= {}KB",
    "Proc - <-----Disk IO----> | <-----Throughput------> RunTime",
    "j: (groupid={}, jobs={}): err= {}: pid=1",
    "j: (groupid={}, jobs={}): err={} (file:x.c:1, error=No space)",
    "j: (g=0): rw=randrw, bs=(R) {}B-{}B, (W) {}B-{}B, (T) 4096B-4096B, ioengine=psync, iodepth={}",
    "j: (g=0): rw=randrw, bs={}K-{}K/{}K-{}K/4K-4K, ioengine=psync, iodepth={}",
    "  read: IOPS={}, BW={}MiB/s ({}MB/s)({}MiB/{}msec)",
    "  write: IOPS={}k, BW={}KiB/s ({}kB/s)({}KiB/{}msec)",
    "  mixed: IOPS={}, BW={}B/s ({}B/s)({}B/{}msec)",
    "  read : io={}KB, bw={}KB/s, iops={}, runt={}msec",
    "    clat (usec): min={}, max={}, avg={}, stdev={}",
    "    clat percentiles (nsec):",
    "     |  {}th=[ {}], {}th=[{}k],",
    "  issued rwts: total={},{},{},0 short=0,0,0,0",
    "  issued    : total=r={}/w={}/d={}",
    "fio-{}",
    "Run status group {} (all jobs):",
    "fio: pid={}, err={}/file:io_u.c:1876, func=io_u error, error=No space left on device",
    # Terse v3: a read and a write block of 41 fields, numbers where the parser reads them.
    "3;fio-3.33;j;{};{};"
    + ";".join((["{}"] * 4 + ["0"] * 5 + ["{}", "{}", "0", "50.00%={}"] + ["0%=0"] * 19 + ["0"] * 9) * 2),
    '{{"fio version": "fio-3.33", "jobs": [{{"jobname": "j", "error": {}, "job options": {{"numjobs": "{}"}}, '
    '"read": {{"total_ios": {}, "runtime": {}, "io_bytes": {}, "io_kbytes": {}}}}}]}}',
]


@st.composite
def format_shaped_lines(draw: st.DrawFn) -> str:
    """At most one long number per text, so the examples stay quick."""
    lines = []
    for template in draw(st.lists(st.sampled_from(LINE_TEMPLATES), min_size=1, max_size=8)):
        count = template.count("{}")
        lines.append(template.format(*draw(st.lists(short_number_tokens, min_size=count, max_size=count))))
    if draw(st.booleans()):
        text = "\n".join(lines)
        numbers = list(re.finditer(r"\d+", text))
        if numbers:
            match = numbers[draw(st.integers(0, len(numbers) - 1))]
            return text[: match.start()] + "9" * 400 + text[match.end() :]
    return "\n".join(lines)


JSON_DOCS = {name: fio.fio_json_documents(text)[0] for name, text in FIXTURE_TEXTS.items() if name.endswith(".json")}
FIO_KEYS = [
    "fio version",
    "jobs",
    "jobname",
    "groupid",
    "error",
    "job options",
    "global options",
    "read",
    "write",
    "trim",
    "mixed",
    "total_ios",
    "io_bytes",
    "io_kbytes",
    "runtime",
    "iops",
    "clat_ns",
    "clat",
    "percentile",
    "bins",
    "N",
    "mean",
    "max",
    "bs",
    "rw",
    "numjobs",
    "kb_base",
    "direct",
    "rwmixread",
    "timestamp_ms",
]
json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**30), 10**30),
        st.floats(),
        st.text(max_size=6),
        st.sampled_from(ODD_NUMBERS),
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(FIO_KEYS) | st.text(max_size=6), inner),
    max_leaves=5,
)


def json_paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Paths into a document, at most a dozen children per container so json+ bins do not crowd the rest out."""
    yield prefix
    if isinstance(value, dict):
        children = list(value.items())[:12]
    elif isinstance(value, list):
        children = list(enumerate(value))[:12]
    else:
        return
    for key, child in children:
        yield from json_paths(child, (*prefix, key))


JSON_PATHS = {
    name: [(i, path) for i, doc in enumerate(docs) for path in json_paths(doc)] for name, docs in JSON_DOCS.items()
}


@st.composite
def reshaped_fio_json(draw: st.DrawFn) -> str:
    """A real fio JSON file with values replaced, removed or added: valid JSON of the wrong shape."""
    name = draw(st.sampled_from(sorted(JSON_DOCS)))
    docs = json.loads(json.dumps(JSON_DOCS[name]))
    for _ in range(draw(st.integers(1, 3))):
        index, path = draw(st.sampled_from(JSON_PATHS[name]))
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if not path:
            docs[index] = draw(json_values)
            continue
        try:
            parent = docs[index]
            for key in path[:-1]:
                parent = parent[key]
            if action == "replace":
                parent[path[-1]] = draw(json_values)
            elif action == "delete":
                del parent[path[-1]]
            elif isinstance(parent[path[-1]], dict):
                parent[path[-1]][draw(st.sampled_from(FIO_KEYS))] = draw(json_values)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed or retyped what this path went through
    note(f"reshaped {name}")
    return "\n".join(json.dumps(doc, indent=1) for doc in docs)


# --- parser properties -----------------------------------------------------------------------------------


def test_every_parser_reads_every_real_fixture_of_its_own_format() -> None:
    parsers = {".json": fio.parse_fio_json, ".txt": None, ".terse": fio.parse_fio_terse}
    for name, text in FIXTURE_TEXTS.items():
        parse = parsers[Path(name).suffix] or (ndisk.parse_ndisk if name.startswith("ndisk") else fio.parse_fio_text)
        assert contract_violation(parse, text) is None, name
        assert contract_violation(parse_output, text) is None, name


@FAST
@given(st.text())
def test_the_parsers_summarise_or_refuse_any_text(text: str) -> None:
    assert_every_parser_keeps_the_contract(text)


@FAST
@given(
    st.one_of(
        st.binary(max_size=400).map(lambda b: b.decode("latin-1")),
        st.binary(max_size=400).map(lambda b: b.decode("utf-8", "surrogateescape")),
    )
)
def test_the_parsers_summarise_or_refuse_binary_garbage(text: str) -> None:
    assert_every_parser_keeps_the_contract(text)


@FUZZ
@given(mutated_fixtures())
def test_the_parsers_summarise_or_refuse_real_output_that_was_cut_or_garbled(text: str) -> None:
    assert_every_parser_keeps_the_contract(text)


@FUZZ
@given(format_shaped_lines())
def test_the_parsers_summarise_or_refuse_lines_shaped_like_tool_output_with_odd_numbers(text: str) -> None:
    assert_every_parser_keeps_the_contract(text)


@FUZZ
@given(reshaped_fio_json())
def test_the_parsers_summarise_or_refuse_valid_fio_json_of_the_wrong_shape(text: str) -> None:
    assert_every_parser_keeps_the_contract(text)


JSON_HEAD = '{"fio version": "fio-3.33", "jobs": '
MINIMAL_INPUTS = [
    pytest.param(
        "json-shape",
        fio.parse_fio_json,
        JSON_HEAD + '[{"read": 1}]}',
        id="json-direction-not-an-object",
    ),
    pytest.param(
        "json-shape",
        fio.parse_fio_json,
        JSON_HEAD + '[{"job options": {"bs": 4096}}]}',
        id="json-bs-a-number",
    ),
    pytest.param(
        "json-shape",
        fio.parse_fio_json,
        JSON_HEAD + '[{"job options": {"rw": 1}}]}',
        id="json-rw-a-number",
    ),
    pytest.param(
        "json-shape",
        fio.parse_fio_json,
        JSON_HEAD + '[{"job options": [1]}]}',
        id="json-job-options-a-list",
    ),
    pytest.param(
        "json-shape",
        fio.parse_fio_json,
        JSON_HEAD + '[], "global options": [1]}',
        id="json-global-options-a-list",
    ),
    pytest.param(
        "json-shape",
        fio.parse_fio_json,
        JSON_HEAD + "1}" + JSON_HEAD + "[]}",
        id="json-earlier-status-document-with-jobs-a-number",
    ),
    pytest.param(
        "superscript-digit",
        fio.parse_fio_json,
        JSON_HEAD + '[{"read": {"clat_ns": {"N": 1, "bins": {"\u00b2": 1}}}}]}',
        id="json-plus-bin-key-superscript-two",
    ),
    pytest.param(
        "superscript-digit",
        ndisk.parse_ndisk,
        "No. of processes = \u00b2\n1 - 1 1 | 1 1 1",
        id="ndisk-processes-superscript-two",
    ),
    pytest.param(
        "superscript-digit",
        ndisk.parse_ndisk,
        "Command: ndisk64 -r \u00b2\n1 - 1 1 | 1 1 1",
        id="ndisk-r-flag-superscript-two",
    ),
    pytest.param(
        "int-digit-limit",
        fio.parse_fio_json,
        JSON_HEAD + "[], " + '"x": ' + "1" * 4301 + "}",
        id="json-4301-digit-number",
    ),
    pytest.param(
        "int-digit-limit",
        fio.parse_fio_text,
        "j: (groupid=0, jobs=" + "1" * 4301 + "): err= 0",
        id="text-4301-digit-jobs",
    ),
    pytest.param(
        "int-digit-limit",
        ndisk.parse_ndisk,
        "1" * 4301 + " - 1 1 | 1 1 1",
        id="ndisk-4301-digit-process-number",
    ),
    pytest.param(
        "json-int-beyond-float",
        fio.parse_fio_json,
        JSON_HEAD + '[{"error": 1' + "0" * 309 + "}]}",
        id="json-error-10-to-the-309",
    ),
    pytest.param(
        "json-int-beyond-float",
        fio.parse_fio_json,
        JSON_HEAD
        + '[{"read": {"total_ios": 1, "runtime": 1, "clat_ns": {"N": 1, "bins": {"1'
        + "0" * 309
        + '": 1}}}}]}',
        id="json-plus-bin-key-10-to-the-309",
    ),
    pytest.param(
        "json-nesting",
        fio.parse_fio_json,
        JSON_HEAD + "[" * 100_000,
        id="json-nested-100000-deep",
    ),
    pytest.param(
        "ndisk-dotted-number",
        ndisk.parse_ndisk,
        "1 - 1 1.2.3 | 1 1 1",
        id="ndisk-row-iops-1.2.3",
    ),
    pytest.param(
        "overflow-to-inf",
        fio.parse_fio_json,
        JSON_HEAD + '[{"read": {"total_ios": 1e306, "runtime": 1}}]}',
        id="json-total-ios-1e306-in-1ms",
    ),
    pytest.param(
        "overflow-to-inf",
        fio.parse_fio_text,
        "j: (groupid=0, jobs=1): err= 0\n read: IOPS=1, BW=" + "9" * 400 + "B/s (1B/s)(1B/1msec)",
        id="text-400-digit-bandwidth",
    ),
    pytest.param(
        "overflow-to-inf",
        fio.parse_fio_terse,
        "3;fio-3.33;j;0;0;1e306;0;1;1" + ";0" * 80,
        id="terse-io-1e306-kib",
    ),
    pytest.param(
        "text-block-size-overflow",
        fio.parse_fio_text,
        "j: (g=0): rw=read, bs=(R) 1B-" + "9" * 400 + "B, (W) 1B-1B, (T) 1B-1B, ioengine=psync, iodepth=1\n"
        "j: (groupid=0, jobs=1): err= 0",
        id="text-400-digit-block-size",
    ),
    pytest.param(
        "negative-passes-through",
        fio.parse_fio_terse,
        "3;fio-3.33;j;0;0;-1;0;1;1" + ";0" * 80,
        id="terse-io-minus-one-kib",
    ),
    pytest.param(
        "negative-passes-through",
        fio.parse_fio_json,
        JSON_HEAD + '[{"job options": {"numjobs": "-2"}}]}',
        id="json-numjobs-minus-two",
    ),
]


@pytest.mark.parametrize(("bug", "parse", "text"), MINIMAL_INPUTS)
def test_the_parsers_keep_the_contract_on_the_minimal_input_of_each_bug_found(
    bug: str, parse: Parser, text: str
) -> None:
    violation = contract_violation(parse, text)
    if violation is not None and known_bug(violation) != bug:
        pytest.fail(f"{violation!r} should match KNOWN_BUGS[{bug!r}]")
    assert violation is None, violation


def test_the_text_parser_reads_a_long_line_without_spaces_in_linear_time() -> None:
    # A linear scan of 10,000 characters takes about a millisecond; the quadratic one took about 1.7 s here,
    # because a name pattern (?P<name>\S+): was retried from every character of the run. This process's CPU
    # time, not the wall clock, so that a busy machine does not fail it.
    started = time.process_time()
    with pytest.raises(ParseError):
        fio.parse_fio_text("x" * 10_000)

    assert time.process_time() - started < 0.5


# --- fio job files and command lines ---------------------------------------------------------------------

SAFE_CHARS = string.ascii_letters + string.digits + "._+@,/-"
SHELL_CHARS = " \t\n'\"$`;&|<>(){}[]*?!~#:=\\%^\x00\u2028"
safe_paths = st.text(SAFE_CHARS, max_size=30).map(lambda s: "/" + s)
any_paths = st.one_of(
    safe_paths,
    st.text(SAFE_CHARS + SHELL_CHARS, max_size=30).map(lambda s: "/" + s),
    st.text(max_size=20),
)
run_dirs = st.builds(
    lambda parent, run_id: f"{parent.rstrip('/')}/{run_id}",
    safe_paths,
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,40}", fullmatch=True),
)
kinds = st.sampled_from(["directory", "block"])


@st.composite
def extra_options(draw: st.DrawFn) -> dict[str, str | int]:
    options: dict[str, str | int] = {}
    for name in draw(st.lists(st.sampled_from(sorted(EXTRA_OPTIONS)), max_size=4, unique=True)):
        value = draw(st.from_regex(EXTRA_OPTIONS[name], fullmatch=True))
        options[name] = int(value) if value.isascii() and value.isdigit() and draw(st.booleans()) else value
    return options


@st.composite
def fio_profiles(draw: st.DrawFn, target_kind: str) -> dict[str, Any]:
    size = st.integers(1, 2**50)
    return {
        "tool": "fio",
        "rw": draw(st.sampled_from(fio.RW_MODES)),
        "read_percent": draw(st.integers(0, 100)),
        "block_size_bytes": draw(st.integers(1, 2**26)),
        "iodepth": draw(st.integers(1, 4096)),
        "jobs": draw(st.integers(1, 256)),
        "runtime_s": draw(st.integers(1, 10**7)),
        "ramp_time_s": draw(st.integers(0, 3600)),
        "size_bytes": draw(size if target_kind == "directory" else st.none() | size),
        "direct": draw(st.booleans()),
        "time_based": draw(st.booleans()),
        "ioengine": draw(st.sampled_from(sorted(IOENGINES))),
        "extra_options": draw(extra_options()),
    }


# What fio reads from a job file: a section header, a ; comment, or option=value with nothing fio treats as
# a comment, a section, a variable or a line break.
INI_LINE = re.compile(r"\[[A-Za-z0-9._-]+\]|;[^\n]*|(?P<key>[a-z][a-z0-9_]*)=(?P<value>[^\s;#\[\]$=]+)")
BENCHWEB_ONLY = {"directory", "filename", "ioengine"}


def job_file_options(jobfile: str) -> list[tuple[str, str]]:
    assert jobfile.endswith("\n")
    options = []
    for line in jobfile[:-1].split("\n"):
        match = INI_LINE.fullmatch(line)
        assert match, f"not a header, comment or key=value line: {line!r}"
        if match["key"]:
            options.append((match["key"], match["value"]))
    return options


def assert_a_safe_job(job: fio.FioJob, params: dict[str, Any], target: str, target_kind: str) -> None:
    assert shlex.split(job.argv_quoted()) == job.argv
    assert job.argv[0] == "fio" and job.argv[-1] == job.jobfile_path
    assert all(arg.startswith("--") for arg in job.argv[1:-1])
    options = job_file_options(job.jobfile)
    keys = [key for key, _ in options]
    assert len(keys) == len(set(keys)), keys
    path_key = "directory" if target_kind == "directory" else "filename"
    assert (path_key, target.rstrip("/") or "/") in options
    assert ("ioengine", params["ioengine"]) in options and params["ioengine"] in IOENGINES
    for key in keys:
        assert key not in FORBIDDEN_OPTIONS or key in BENCHWEB_ONLY, key
        assert not key.endswith(FORBIDDEN_SUFFIXES), key
    assert "directory" not in keys or "filename" not in keys
    for name, value in params["extra_options"].items():
        assert (name, str(value)) in options


@FAST
@given(data=st.data(), target_kind=kinds, target=safe_paths, run_dir=run_dirs)
def test_a_valid_fio_profile_on_a_safe_path_becomes_a_plain_job_file_and_a_command_that_survives_the_shell(
    data: st.DataObject, target_kind: str, target: str, run_dir: str
) -> None:
    params = data.draw(fio_profiles(target_kind))
    readonly = data.draw(st.booleans())
    if readonly and params["rw"] not in fio.READ_ONLY_MODES:
        with pytest.raises(ToolOptionError) as refused:
            fio.build_fio_job(params, target, target_kind, run_dir, readonly=readonly)
        assert refused.value.field == "rw"
        return
    job = fio.build_fio_job(params, target, target_kind, run_dir, readonly=readonly)

    assert_a_safe_job(job, params, target, target_kind)
    if target_kind == "block" and params["rw"] in fio.READ_ONLY_MODES:
        assert "--readonly" in job.argv and "allow_file_create=0\n" in job.jobfile


@FAST
@given(data=st.data(), target_kind=kinds, target=any_paths, run_dir=run_dirs)
def test_fio_refuses_every_target_path_outside_the_safe_characters_naming_the_target_path(
    data: st.DataObject, target_kind: str, target: str, run_dir: str
) -> None:
    params = data.draw(fio_profiles(target_kind))
    if not SAFE_PATH.fullmatch(target):
        with pytest.raises(ToolOptionError) as refused:
            fio.build_fio_job(params, target, target_kind, run_dir, readonly=False)
        assert refused.value.field == "target_path"
        return
    assert_a_safe_job(
        fio.build_fio_job(params, target, target_kind, run_dir, readonly=False), params, target, target_kind
    )


forbidden_names = st.one_of(
    st.sampled_from(sorted(FORBIDDEN_OPTIONS)).flatmap(lambda name: st.sampled_from([name, f"-{name}", f"--{name}"])),
    st.tuples(st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True), st.sampled_from(FORBIDDEN_SUFFIXES)).map("".join),
    st.sampled_from(["write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log"]),
)
hostile_values = st.one_of(
    st.sampled_from(["1", "external:/tmp/evil.so", "/etc/passwd", "touch /tmp/pwned", "0"]),
    st.text(max_size=20),
    st.integers(),
)


@FAST
@given(
    data=st.data(), name=forbidden_names, value=hostile_values, target_kind=kinds, target=safe_paths, run_dir=run_dirs
)
def test_a_forbidden_fio_option_is_always_refused_among_valid_extra_options(
    data: st.DataObject, name: str, value: str | int, target_kind: str, target: str, run_dir: str
) -> None:
    params = data.draw(fio_profiles(target_kind))
    extras = list(params["extra_options"].items())
    extras.insert(data.draw(st.integers(0, len(extras))), (name, value))
    params["extra_options"] = dict(extras)

    with pytest.raises(ToolOptionError) as refused:
        fio.build_fio_job(params, target, target_kind, run_dir, readonly=False)

    assert refused.value.field == "extra_options"
    assert f"fio option '{name}' is not allowed: " in str(refused.value)
    assert check_extra_options(params["extra_options"]) == {"extra_options": str(refused.value)}


@FAST
@given(
    data=st.data(),
    name=st.one_of(st.text(max_size=20), st.integers(), st.none(), st.floats()).filter(
        lambda name: name not in EXTRA_OPTIONS
    ),
    value=hostile_values,
)
def test_an_fio_option_outside_the_allow_list_is_refused_whatever_its_name(
    data: st.DataObject, name: object, value: str | int
) -> None:
    params = data.draw(fio_profiles("directory"))
    params["extra_options"] = {**params["extra_options"], name: value}

    with pytest.raises(ToolOptionError) as refused:
        fio.build_fio_job(params, "/data", "directory", "/var/tmp/run-1", readonly=False)

    assert refused.value.field == "extra_options"
    assert check_extra_options(params["extra_options"]) == {"extra_options": str(refused.value)}


@FAST
@given(data=st.data(), name=st.sampled_from(sorted(EXTRA_OPTIONS)), breaker=st.sampled_from("\n\r;#[]=$ \t\x00\u2028"))
def test_an_allowed_fio_option_whose_value_would_break_the_ini_line_is_refused(
    data: st.DataObject, name: str, breaker: str
) -> None:
    value = data.draw(st.from_regex(EXTRA_OPTIONS[name], fullmatch=True))
    at = data.draw(st.integers(0, len(value)))
    params = data.draw(fio_profiles("directory")) | {"extra_options": {name: value[:at] + breaker + value[at:]}}

    with pytest.raises(ToolOptionError) as refused:
        fio.build_fio_job(params, "/data", "directory", "/var/tmp/run-1", readonly=False)

    assert refused.value.field == "extra_options"


@FAST
@given(data=st.data(), name=st.sampled_from(sorted(EXTRA_OPTIONS)), value=st.one_of(st.text(), st.integers()))
def test_an_allowed_fio_option_with_any_value_is_refused_or_written_as_one_plain_line(
    data: st.DataObject, name: str, value: str | int
) -> None:
    params = data.draw(fio_profiles("directory")) | {"extra_options": {name: value}}
    try:
        job = fio.build_fio_job(params, "/data", "directory", "/var/tmp/run-1", readonly=False)
    except ToolOptionError as refused:
        assert refused.field == "extra_options"
        return
    assert_a_safe_job(job, params, "/data", "directory")


@FAST
@given(
    data=st.data(),
    ioengine=st.one_of(st.text(max_size=20), st.sampled_from(["external:/tmp/evil.so", "external", None])).filter(
        lambda engine: engine not in IOENGINES
    ),
)
def test_an_ioengine_outside_the_list_is_refused_naming_the_ioengine(data: st.DataObject, ioengine: str | None) -> None:
    params = data.draw(fio_profiles("directory")) | {"ioengine": ioengine}

    with pytest.raises(ToolOptionError) as refused:
        fio.build_fio_job(params, "/data", "directory", "/var/tmp/run-1", readonly=False)

    assert refused.value.field == "ioengine"


# --- ndisk64 command lines -------------------------------------------------------------------------------

ndisk_profiles = st.fixed_dictionaries(
    {
        "tool": st.just("ndisk64"),
        "pattern": st.sampled_from(sorted(ndisk.PATTERNS)),
        "read_percent": st.integers(0, 100),
        "jobs": st.integers(1, 64),
        "block_size_bytes": st.integers(1, 2**26) | st.integers(1, 1024).map(lambda k: k << 10),
        "size_bytes": st.integers(1, 2**44) | st.integers(1, 4096).map(lambda m: m << 20),
        "runtime_s": st.integers(1, 10**7),
        "direct": st.booleans(),
    }
)


@FAST
@given(params=ndisk_profiles, target=any_paths, target_kind=kinds, run_dir=run_dirs)
def test_ndisk64_gets_a_command_line_that_survives_the_shell_or_a_refusal_naming_the_target_path(
    params: dict[str, Any], target: str, target_kind: str, run_dir: str
) -> None:
    if not SAFE_PATH.fullmatch(target) or "," in target or "+" in target:
        with pytest.raises(ToolOptionError) as refused:
            ndisk.build_ndisk_argv(params, target, target_kind, run_dir)
        assert refused.value.field == "target_path"
        return
    argv = ndisk.build_ndisk_argv(params, target, target_kind, run_dir)

    assert shlex.split(shlex.join(argv)) == argv
    assert argv[:2] == ["ndisk64", ndisk.PATTERNS[params["pattern"]]]
    files = argv[argv.index("-f") + 1 :]
    assert len(files) == (params["jobs"] if target_kind == "directory" else 1)
    assert all(SAFE_PATH.fullmatch(name) and "," not in name and "+" not in name for name in files)
    assert all(name.startswith(target.rstrip("/")) for name in files)


# --- the safety probe ------------------------------------------------------------------------------------

# Each tries to create a file: "pwned" in the probe's working directory, or @MARK@ (an absolute path there).
PAYLOADS = [
    "$(touch @MARK@)",
    "`touch @MARK@`",
    ";touch @MARK@",
    "'; touch @MARK@; '",
    '"; touch @MARK@; "',
    "\ntouch @MARK@\n",
    "|touch pwned",
    "&&touch pwned",
    "${x:-$(touch @MARK@)}",
    "\\$(touch pwned)",
    "'\"$(touch @MARK@)\"'",
    "\u2028$(touch pwned)",
    "$(touch${IFS}@MARK@)",
    ">pwned",
    "\\",
    "*",
    "..",
    " ",
]
LINE_SEPARATORS = "\x85\u2028\u2029"  # str.splitlines() breaks lines at these, sh and printf do not
hostile_targets = st.builds(
    lambda prefix, parts: prefix + "".join(parts),
    st.sampled_from(["@TMP@/x", "@TMP@/", "/nonexistent-benchweb/", "x", "", "-x"]),
    st.lists(st.one_of(st.sampled_from(PAYLOADS), st.text(st.characters(codec="utf-8"), max_size=4)), min_size=1),
)


@settings(max_examples=25, deadline=None, database=None)
@given(hostile_targets)
def test_the_safety_probe_runs_nothing_a_hostile_target_path_asks_for(template: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        target = template.replace("@TMP@", tmp).replace("@MARK@", f"{tmp}/pwned")
        note(f"target={target!r}")
        result = subprocess.run(
            ["sh", "-c", safety.check_script(target, "directory", writes=True)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            cwd=tmp,
        )

        assert list(Path(tmp).iterdir()) == []
        assert (result.returncode, result.stderr) == (0, "")
        verdict = safety.judge(result.stdout, kind="directory", writes=True, allow_destructive=False)
        assert not verdict.ok or Path(target).is_dir(), verdict
        values, complete = safety.parse_report(result.stdout)
        assert complete
        # jobs/paths.py: absolute, no '..', and no control, separator, format, surrogate, private or unassigned
        # character; the report shows any other path escaped.
        unusable = (
            not target.startswith("/")
            or ".." in target.split("/")
            or any(unicodedata.category(c) in {"Cc", "Zl", "Zp", "Cf", "Cs", "Co", "Cn"} for c in target)
        )
        assert values["target"] == [target.encode("unicode_escape").decode("ascii") if unusable else target]


# str.splitlines() in safety.parse_report once broke at these, which _path_problem let through, so a path could
# print its own type=, writable= and statfs= lines before the real ones.
@pytest.mark.parametrize("separator", list(LINE_SEPARATORS))
def test_a_target_path_with_a_unicode_line_separator_cannot_forge_report_lines(separator: str) -> None:
    forged = separator.join(["/nonexistent-benchweb", "type=directory", "writable=yes", "statfs=99999999 4096"])
    result = subprocess.run(
        ["sh", "-c", safety.check_script(forged, "directory", writes=True)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )

    verdict = safety.judge(result.stdout, kind="directory", writes=True, allow_destructive=False, needed_bytes=1)

    assert not verdict.ok
