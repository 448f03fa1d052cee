"""Runs, a run's per-second samples, a sweep's points and a group's members and totals as CSV, for a spreadsheet or
a script (the pages' and the API's downloads).

A row is written as it is read: the runs come from the database in chunks and leave as CSV lines through a
StreamingHttpResponse, so an export of 100,000 runs never holds them all in memory.

What a cell holds:
- numbers as stored, every digit (1506.502, never "1.51k"), in the unit its column names (`_iops`,
  `_bytes_per_s`, `_us`); the tool's own text, digits and unit as it printed them, is beside them in the
  `_printed` columns where the result kept it;
- times in UTC, ISO 8601 with the zone written (2026-11-25T19:50:35Z), and the header says `_utc`;
- an empty cell for what the tool did not report or the run does not have: never a 0 that was not measured;
- text a person typed (names, warnings) whose first visible character is = + - @ or their fullwidth forms
  (U+FF1D, U+FF0B, U+FF0D, U+FF20), after any blanks, line breaks or invisible characters, or that starts with
  a tab or a carriage return, gets a leading apostrophe, so a spreadsheet shows it instead of running it as a
  formula (CSV injection). Numbers are written as numbers, untouched, and so is text that is one number ("-42", fio's
  "1506.502000"): a negative number is not a formula.
"""

from __future__ import annotations

import csv
import itertools
import re
import unicodedata
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.utils.text import slugify

from jobs import limits
from jobs.models import HostSample, Run, RunSample
from jobs.sets.group_history import member_figures
from jobs.tools.summary import PERCENTILES

# What a spreadsheet reads as the start of a formula (OWASP's list: = + - @, tab and carriage return), with the
# fullwidth signs some spreadsheets take for the ASCII ones, and what it skips before it: blanks, line breaks
# and invisible characters (Unicode's space separators, line and paragraph separators, controls, formats).
FORMULA_SIGNS = frozenset("=+-@\uff1d\uff0b\uff0d\uff20")
FORMULA_STARTS = ("\t", "\r")
_SKIPPED = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf"})
# Text that is one plain number ("-42", "1506.502000"): a spreadsheet reads it as that number, so it stays as is.
NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# Rows read from the database at a time.
CHUNK = 2000

DIRECTIONS = ("read", "write", "total")

RUN_HEADER = [
    "run_id", "state", "host", "disk", "profile", "trigger", "created_at_utc", "started_at_utc", "finished_at_utc",
    "tool", "tool_version", "rw", "block_size_printed", "block_size_bytes", "iodepth", "numjobs",
    *[f"{d}_iops" for d in DIRECTIONS],
    *[f"{d}_bw_bytes_per_s" for d in DIRECTIONS],
    *[f"{d}_{key}_us" for d in ("read", "write") for key, _ in PERCENTILES],
    *[f"{d}_{figure}_printed" for d in DIRECTIONS for figure in ("iops", "bw")],
    "limit_iops", "burst_limit_iops", "limit_source", "limit_source_url", "limit_source_date", "limit_verified",
    "efficiency_percent", "steady_state", "warning_count", "warnings", "run_url",
]  # fmt: skip

# What a row is read from: plain values, no model instances, no bulky output.
_RUN_COLUMNS = (
    "pk", "state", "disk__host__name", "disk__label", "profile_name", "trigger", "created_at", "started_at",
    "finished_at", "summary", "limits_snapshot", "steady_state", "warnings",
)  # fmt: skip

SAMPLE_HEADER = ["t_s", "time_utc", "read_iops", "write_iops", "total_iops"]

# A sweep's point after its index and its axes' fields (iodepth, jobs, block_size_bytes, read_percent): the
# numbers its set's result holds (jobs/sets/summary.py point_numbers), latencies of the worse direction.
POINT_FIGURES = ["iops", "bw_bytes_per_s", "p50_us", "p99_us", "p99_9_us", "limit_iops", "burst_iops"]
POINT_COLUMNS = {"burst_iops": "burst_limit_iops"}  # named as the runs CSV names it


def guarded(text: str) -> str:
    """A person's text as a cell a spreadsheet will not run: '=SUM(A1)' -> "'=SUM(A1)", ' =1' -> "' =1"."""
    if NUMBER.fullmatch(text):
        return text
    if text.startswith(FORMULA_STARTS):
        return f"'{text}"
    first = next((c for c in text if not (c.isspace() or unicodedata.category(c) in _SKIPPED)), "")
    return f"'{text}" if first in FORMULA_SIGNS else text


def cell(value: Any) -> str | int | float:
    """None -> empty; numbers as they are (an integral float without its '.0'); text guarded."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, int | float):
        return value
    return guarded(str(value))


def utc(moment: datetime | None) -> str:
    """2026-11-25T19:50:35Z; whole seconds unless the moment has a fraction."""
    if moment is None:
        return ""
    text = moment.astimezone(UTC).isoformat(timespec="milliseconds" if moment.microsecond else "seconds")
    return text.replace("+00:00", "Z")


def _at(doc: Any, *path: str) -> Any:
    for key in path:
        doc = doc.get(key) if isinstance(doc, dict) else None
    return doc


def _efficiency(measured: Any, promised: float | None) -> float | None:
    if not isinstance(measured, int | float) or not promised:
        return None
    return round(100 * measured / promised, 2)


def _limit_facts(snapshot: dict[str, Any] | None) -> list[Any]:
    """The baseline and burst IOPS the run was made against (at its block size) and where they come from."""
    promised = limits.promised_iops(snapshot)
    if promised is None:
        return [None] * 6
    assert snapshot is not None  # a promise comes from a snapshot
    source = snapshot.get("source") or {}
    if not source.get("url"):
        return [promised, limits.promised_iops(snapshot, burst=True), "typed by hand in the disk's spec", *[None] * 3]
    record, verified = snapshot.get("record_id") or source["url"], bool(source.get("verified"))
    return [
        promised, limits.promised_iops(snapshot, burst=True), record, source["url"], source.get("date") or None,
        verified,
    ]  # fmt: skip


def run_row(values: tuple[Any, ...], runs_url: str) -> list[Any]:
    """One run as RUN_HEADER orders it, from the _RUN_COLUMNS values; `runs_url` + id + / is its page."""
    pk, state, host, disk, profile, trigger, created, started, finished, summary, snapshot, steady, warnings = values
    summary = summary if isinstance(summary, dict) else {}
    workload = summary.get("workload") or {}
    printed = summary.get("printed") or {}
    facts = _limit_facts(snapshot)
    warnings = [str(w) for w in warnings or []]
    return [
        pk, state, host, disk, profile, trigger, utc(created), utc(started), utc(finished),
        summary.get("tool"), summary.get("tool_version"), workload.get("rw"), workload.get("block_size"),
        summary.get("block_size_bytes"), workload.get("iodepth"), workload.get("numjobs"),
        *[_at(summary, d, "iops") for d in DIRECTIONS],
        *[_at(summary, d, "bw_bytes_per_s") for d in DIRECTIONS],
        *[_at(summary, d, "clat_us", key) for d in ("read", "write") for key, _ in PERCENTILES],
        *[_at(printed, d, figure) for d in DIRECTIONS for figure in ("iops", "bw")],
        *facts, _efficiency(_at(summary, "total", "iops"), facts[0]),
        (steady or {}).get("state") if summary else None,
        len(warnings), "; ".join(warnings) or None, f"{runs_url}{pk}/",
    ]  # fmt: skip


def run_rows(runs: QuerySet[Run], runs_url: str) -> Iterator[list[Any]]:
    """The header, then every run of `runs` newest first, read CHUNK at a time. `runs_url` is the absolute
    address the run pages are under (https://bench.example/runs/)."""
    yield RUN_HEADER
    ordered = runs.order_by("-created_at", "-pk").values_list(*_RUN_COLUMNS)
    for values in ordered.iterator(chunk_size=CHUNK):
        yield run_row(values, runs_url)


def sample_rows(run: Run) -> Iterator[list[Any]]:
    """The header, then the run's per-second samples in time order, with the moment each one ends at (the run's
    start plus t_s) where the run has a start."""
    yield SAMPLE_HEADER
    samples = RunSample.of_run(run).order_by("t_s").values_list("t_s", "read_iops", "write_iops")
    for t_s, read, write in samples.iterator(chunk_size=CHUNK):
        at = run.started_at + timedelta(seconds=t_s) if run.started_at else None
        total = None if read is None and write is None else (read or 0.0) + (write or 0.0)
        yield [t_s, utc(at), read, write, total]


TELEMETRY_HEADER = [
    "t_s", "time_utc", "cpu_user_percent", "cpu_system_percent", "cpu_iowait_percent", "cpu_steal_percent",
    "cpu_idle_percent", "busiest_cpu", "busiest_cpu_busy_percent", "mem_available_bytes", "page_cache_bytes",
    "dirty_bytes", "load1", "psi_io_some_percent", "psi_io_full_percent", "psi_cpu_some_percent",
    "psi_memory_some_percent", "psi_memory_full_percent", "device", "device_read_iops", "device_write_iops",
    "device_read_mb_s", "device_write_mb_s", "device_queue", "device_await_ms", "device_util_percent",
]  # fmt: skip


def telemetry_rows(run: Run) -> Iterator[list[Any]]:
    """The header, then the run's host telemetry second by second (HostSample.of_run), one row per device of each
    second (one row with the device empty for a second without device figures). An empty cell: not reported."""
    yield TELEMETRY_HEADER
    for second in HostSample.of_run(run):
        at = datetime.fromtimestamp(second["t"], tz=UTC)
        cpu, memory, pressure = second.get("cpu") or {}, second.get("memory") or {}, second.get("pressure") or {}
        busiest = cpu.get("busiest") or {}
        host = [
            second["t_s"], utc(at), cpu.get("user"), cpu.get("system"), cpu.get("iowait"), cpu.get("steal"),
            cpu.get("idle"), busiest.get("cpu"), busiest.get("busy"), memory.get("available_bytes"),
            memory.get("cached_bytes"), memory.get("dirty_bytes"), second.get("load1"), pressure.get("io_some"),
            pressure.get("io_full"), pressure.get("cpu_some"), pressure.get("memory_some"), pressure.get("memory_full"),
        ]  # fmt: skip
        devices = second.get("devices") or {}
        for name, figures in sorted(devices.items()) or [("", {})]:
            yield [*host, name, *(figures.get(key) for key in DEVICE_FIGURES)]


DEVICE_FIGURES = ("read_iops", "write_iops", "read_mb_s", "write_mb_s", "queue", "await_ms", "util")


def point_rows(points: Iterable[dict[str, Any]], axes: list[str], runs_url: str) -> Iterator[list[Any]]:
    """The header, then one row per point of a sweep in its order: index (from 0), the value of each axis, the
    member run and its state, its figures (empty where it did not succeed or its tool did not report one), the
    run's page. `points` are a set's result's; `axes` its plan's fields in order."""
    yield ["index", *axes, "run_id", "state", *[POINT_COLUMNS.get(f, f) for f in POINT_FIGURES], "run_url"]
    for point in points:
        where = point.get("point") or {}
        yield [
            point.get("index"), *[where.get(field) for field in axes], point.get("run"), point.get("state"),
            *[point.get(figure) for figure in POINT_FIGURES], f"{runs_url}{point.get('run')}/",
        ]  # fmt: skip


# A group's file: a row per member, then a row per total (its window on the common clock), then its limit.
GROUP_HEADER = [
    "row", "member", "run_id", "disk", "host", "state", "started_at_utc", "iops", "bw_bytes_per_s", "p99_us",
    "window_start_utc", "window_end_utc", "window_seconds", "note", "run_url",
]  # fmt: skip
GROUP_TOTALS = ("all_running", "whole_runs", "span")


def group_rows(
    members: Iterable[Run], result: dict[str, Any], limit: dict[str, Any], runs_url: str
) -> Iterator[list[Any]]:
    """The header, then one row per member in order (its whole run's IOPS, bytes/s and worse direction's p99, as its
    page shows them; empty where it did not succeed), one per total of the group's result ("total", named by the
    window it covers, with the window's start, end and length), and the group's limit ("limit", how it was found)."""
    yield GROUP_HEADER
    for member in members:
        numbers = member_figures(member)
        yield [
            "member", f"member {(member.set_index or 0) + 1}", member.pk, member.disk.label, member.disk.host.name,
            member.state, utc(member.started_at), numbers["iops"], numbers["bytes_per_s"], numbers["p99_us"],
            None, None, None, None, f"{runs_url}{member.pk}/",
        ]  # fmt: skip
    totals = result.get("totals") or {}
    for name in GROUP_TOTALS:
        total = totals.get(name)
        if total is None:
            continue
        window = total.get("window") or {}
        yield [
            "total", total.get("what"), None, None, None, None, None, total.get("iops"), total.get("bytes_per_s"),
            None, _epoch_utc(window.get("start")), _epoch_utc(window.get("end")), window.get("seconds"),
            total.get("why") or None, None,
        ]  # fmt: skip
    yield ["limit", None, None, None, None, None, None, limit.get("iops"), limit.get("bytes_per_s"), None, None, None,
           None, limit.get("text") or None, None]  # fmt: skip


def _epoch_utc(seconds: Any) -> str:
    if not isinstance(seconds, int | float):
        return ""
    return utc(datetime.fromtimestamp(seconds, UTC))


class _Line:
    """What csv.writer writes to: it hands the line back instead of keeping it."""

    def write(self, line: str) -> str:
        return line


def streamed(rows: Iterable[list[Any]], filename: str) -> StreamingHttpResponse:
    """The rows as a CSV download, written as they are read, LINES_A_WRITE lines to a write: one write per line
    costs the server a system call each."""
    response = StreamingHttpResponse(_blocks(rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# How many CSV lines go out in one piece (a few tens of kB).
LINES_A_WRITE = 200


def _blocks(rows: Iterable[list[Any]]) -> Iterator[str]:
    writer = csv.writer(_Line())
    lines = (writer.writerow([cell(value) for value in row]) for row in rows)
    while block := "".join(itertools.islice(lines, LINES_A_WRITE)):
        yield block


def filename(*parts: str, day: datetime) -> str:
    """benchweb-runs-ssd-data-2026-11-25.csv: the parts slugified (a name never breaks the header)."""
    words = [slugify(part)[:60] for part in parts if part]
    return "-".join(["benchweb", *[w for w in words if w], day.astimezone(UTC).date().isoformat()]) + ".csv"
