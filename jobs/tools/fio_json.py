"""fio's JSON output (docs/reference/fio-output.md#json-output, #pitfalls-in-fio-json) read into the canonical
summary: fio 2.x and 3.x, one document or the cumulative
stream --status-interval writes, json+ latency bins included (pure). The documents are found and decoded by
jobs/tools/fio_json_documents.py."""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

from jobs.tools import fio_fill, fio_own_view
from jobs.tools.fio_common import (
    DIRECTIONS,
    _clock_ms,
    _errno_messages,
    _mode_read_percent,
    checked_read_percent,
    part_labeller,
    representative,
)
from jobs.tools.fio_json_documents import fio_json_documents
from jobs.tools.fio_steady import steadystate
from jobs.tools.summary import (
    DirectionStats,
    ParseError,
    ParseResult,
    amount,
    excerpt,
    finite,
    make_summary,
    make_workload,
    merge_direction,
    printed_figures,
    same_or_none,
)

MIN_SAMPLE_MS = 250
DIRECTION_KEYS = ("read", "write", "trim", "mixed")
# json+ bin keys are latencies in ns and their values counts of I/Os, both fio uint64 counters
# (#json-plus-latency-bins).
_BIN_KEY = re.compile(r"[0-9]{1,20}")
_UINT64_END = 2**64
_KB_BASES = {"1024": 1024, "1000": 1000}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    names: dict[type[Any], str] = {str: "a string", list: "an array"}
    return names.get(type(value), "an object")


def _object(value: Any, where: str) -> dict[str, Any]:
    """An object fio may leave out: {} when it is missing or null, ParseError when it is anything else."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ParseError(f"{where} should be a JSON object, not {_json_type(value)}.")
    return value


def _options(value: Any, where: str) -> dict[str, str]:
    """ "job options" or "global options": fio prints every option as the string that was typed (#json-per-job-keys)."""
    options = _object(value, where)
    for name, setting in options.items():
        if not isinstance(setting, str):
            raise ParseError(f"{where}: {excerpt(name, 40)} should be a string, not {_json_type(setting)}.")
    return options


def _checked_jobs(doc: dict[str, Any], where: str, *, status: bool = False) -> list[dict[str, Any]]:
    """doc's jobs, once everything the parser walks through has the shape fio prints.

    An object or list of another type is a ParseError naming its key; one fio may leave out (a direction, the
    options, a percentile map) may be missing or null. Numbers are read with finite()/amount(), so a number
    that is missing, null, nan or not a number is None, never a guess, and a negative one is a ParseError.
    Of a status document (status=True: one before a stream's last) the parser walks only to its directions'
    counters (_samples), so its options and latencies are left as they are: a 120-document stream spent more
    on checking them than on reading the documents.
    """
    jobs = doc.get("jobs")
    if not isinstance(jobs, list):
        raise ParseError(f'{where} has no "jobs" list (nor fio --client\'s "client_stats").')
    for number, job in enumerate(jobs, 1):
        label = f"{where}, job {number}"
        if not isinstance(job, dict):
            raise ParseError(f"{label} should be a JSON object, not {_json_type(job)}.")
        if not status:
            _options(job.get("job options"), f'{label}: "job options"')
        group = job.get("groupid")
        if group is not None and (isinstance(group, bool) or not isinstance(group, int)):
            raise ParseError(f'{label}: "groupid" should be a whole number, not {_json_type(group)}.')
        for direction in DIRECTION_KEYS:
            data = _object(job.get(direction), f'{label}: "{direction}"')
            if status:
                continue
            for latency in ("clat_ns", "clat"):
                clat = _object(data.get(latency), f'{label}: "{direction}" "{latency}"')
                for key in ("percentile", "bins"):
                    _object(clat.get(key), f'{label}: "{direction}" "{latency}" "{key}"')
    return jobs


def _option_bytes(value: str | None, kb_base: int | None) -> int | None:
    """fio's reading of a size option: with kb_base=1024, k/KB are 1024 and KiB is 1000 (#size-suffixes-on-input).
    None when it
    is not one fixed size (4k,8k or 4k:8k) or longer than any size fio takes."""
    match = re.fullmatch(r"\s*([0-9]{1,20})\s*([kmgtpe]?)(i?)b?\s*", value or "", re.IGNORECASE)
    if not match or kb_base is None:
        return None
    base = kb_base if not match[3] else {1024: 1000, 1000: 1024}.get(kb_base, kb_base)
    scale: int = base ** "_kmgtpe".index(match[2].lower() or "_")
    return int(match[1]) * scale


def _json_direction(data: dict[str, Any], where: str) -> DirectionStats | None:
    """One direction of a job whose shape _checked_jobs has checked; None when the job has no such direction."""
    if not data:
        return None
    runtime = amount(data.get("runtime"), f'{where} "runtime"') or 0.0
    ios = amount(data.get("total_ios"), f'{where} "total_ios"')
    io_bytes = amount(data.get("io_bytes"), f'{where} "io_bytes"')
    if io_bytes is not None and "io_kbytes" not in data and "clat_ns" not in data:
        io_bytes *= 1024  # io_bytes held KiB up to fio 2.20 (#json-changes-from-2x-to-3x)
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
        # skips 2.x's "0.00": 0 (#fio-2x-json-quirks)
        if percent is not None and 0 < percent <= 100 and number is not None:
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
    json+ keyed bins in µs or bucket indices, #json-plus-latency-bins.)"""
    result: dict[str, dict[int, int]] = {}
    for index, job in enumerate(_checked_jobs(doc, where), 1):
        for direction in DIRECTIONS:
            clat = (job.get(direction) or {}).get("clat_ns") or {}
            for value, count in _bins(clat, f'{where}, job {index}: "{direction}" "clat_ns"').items():
                merged = result.setdefault(direction, {})
                merged[value] = merged.get(value, 0) + count
    return result


def _job_clock_entries(jobs: list[dict[str, Any]], where: str) -> list[tuple[Any, float]]:
    return [
        (job.get("groupid"), _job_amount(job, direction, "runtime", f"{where}, job {index}") or 0.0)
        for index, job in enumerate(jobs, 1)
        for direction in DIRECTION_KEYS
    ]


def _job_amount(job: dict[str, Any], direction: str, key: str, where: str) -> float | None:
    return amount((job.get(direction) or {}).get(key), f'{where}: "{direction}" "{key}"')


def _samples(docs: list[dict[str, Any]], labels: list[str], wanted: dict[str, bool]) -> list[dict[str, float | None]]:
    """Per-interval IOPS from cumulative status documents (already checked): Δtotal_ios ÷ Δruntime
    (#live-progress-and-time-series)."""
    if len(docs) < 2:
        return []
    points: list[_Point] = []
    for doc, label in zip(docs, labels, strict=True):
        jobs = doc["jobs"]
        reads, writes = (
            sum(_job_amount(job, d, "total_ios", f"{label}, job {i}") or 0 for i, job in enumerate(jobs, 1))
            for d in DIRECTIONS
        )
        points.append((_clock_ms(_job_clock_entries(jobs, label)), reads, writes, finite(doc.get("timestamp_ms"))))
    kept: list[tuple[float, float, float]] = []
    previous: _Point | None = None
    for point in points:
        if previous and _counters_restarted(previous, point):
            kept = []  # what came before was ramp_time, which fio leaves out of its statistics
        kept.append(point[:3])
        previous = point
    marks = [(0.0, 0.0, 0.0)]
    for mark in kept:
        if mark[0] - marks[-1][0] >= MIN_SAMPLE_MS:
            marks.append(mark)
        elif len(marks) > 1:
            # The final document often lands milliseconds after the last status one; a rate over so short
            # an interval is noise, so the interval before absorbs it.
            marks[-1] = mark
    samples: list[dict[str, float | None]] = []
    for before, after in pairwise(marks):
        elapsed = after[0] - before[0]
        rates = [(after[i] - before[i]) * 1000 / elapsed if wanted[d] else None for i, d in enumerate(DIRECTIONS, 1)]
        samples.append({"t_s": after[0] / 1000, "read_iops": rates[0], "write_iops": rates[1]})
    return samples


# A cumulative status document: its clock (ms), read and write I/Os so far, and its wall time (ms) if fio gave one.
_Point = tuple[float, float, float, float | None]


def _counters_restarted(before: _Point, after: _Point) -> bool:
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
    its members; fio then shows only the first member's numjobs (#group-reporting)."""
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
    """The job's errno, 0 when it has none (#jobs-that-fail)."""
    value = job.get("error")
    number = finite(value)
    if value is not None and (number is None or not number.is_integer() or abs(number) >= 2**31):
        raise ParseError(f'{where}: "error" should be an errno, a whole number, not {excerpt(str(value), 30)}.')
    return int(number or 0)


def _as_written(value: Any) -> str | None:
    """A JSON number as the text had it ("1506.502000"), None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return getattr(value, "text", None) or str(value)


def _printed(data: dict[str, Any]) -> dict[str, str] | None:
    """summary["printed"] of one direction of one entry: fio's iops, bw (KiB/s), bw_bytes and runtime (ms)."""
    figures = {key: _as_written(data.get(key)) for key in ("iops", "bw", "bw_bytes", "runtime")}
    return printed_figures(
        iops=figures["iops"],
        bw=figures["bw"] and f"{figures['bw']} KiB/s",
        bw_alt=figures["bw_bytes"] and f"{figures['bw_bytes']} B/s",
        runtime=figures["runtime"] and f"{figures['runtime']} ms",
    )


def _whole_option(value: str | None) -> int | None:
    match = re.fullmatch(r"\s*([0-9]{1,9})\s*", value or "")
    return int(match[1]) if match else None


def _with_jobs(doc: dict[str, Any]) -> dict[str, Any]:
    """fio --client's document keeps its entries in "client_stats" rather than "jobs"."""
    if "jobs" not in doc and isinstance(doc.get("client_stats"), list):
        return {**doc, "jobs": doc["client_stats"]}
    return doc


def _host(job: dict[str, Any]) -> tuple[str, str]:
    """The entry's "hostname" and "port" as text (whatever JSON value they hold)."""
    return str(job.get("hostname")), str(job.get("port"))


def _client_of(job: dict[str, Any], hosts: dict[str, set[str]]) -> str:
    if job.get("jobname") == "All clients":
        return "All clients"
    host, port = _host(job)
    return f"client {host}:{port}" if len(hosts.get(host, ())) > 1 else f"client {host}"


def _client_keys(jobs: list[dict[str, Any]], diagnostics: list[str]) -> list[str]:
    """Each entry's client ("client 10.0.0.5", "All clients"). Without host names (fio#515,
    #client-and-server-mode) the clients cannot be told apart but by their order: each entry is then taken as one
    client, numbered in the order fio printed them, and a diagnostic says so."""
    if any("hostname" in job for job in jobs if job.get("jobname") != "All clients"):
        hosts: dict[str, set[str]] = {}
        for job in jobs:
            host, port = _host(job)
            hosts.setdefault(host, set()).add(port)
        return [_client_of(job, hosts) for job in jobs]
    diagnostics.append(
        "fio printed no host name for its clients (fio#515): each entry is taken as one client, numbered in the "
        "order fio printed them; a client that ran several jobs would be counted as several."
    )
    numbers = iter(range(1, len(jobs) + 1))
    return ["All clients" if job.get("jobname") == "All clients" else f"client {next(numbers)}" for job in jobs]


def _global_options(doc: dict[str, Any], where: str) -> tuple[dict[str, str], dict[tuple[str, str], dict[str, str]]]:
    """ "global options": one object, or (fio 3.43, #client-and-server-mode) an array of one object a client
    whose job file has a [global] section, each naming its client by "hostname" and "port". Returns the shared
    options and each client's, keyed by (hostname, port) as text."""
    given = doc.get("global options")
    if not isinstance(given, list):
        return _options(given, f'{where}: "global options"'), {}
    by_client: dict[tuple[str, str], dict[str, str]] = {}
    for number, item in enumerate(given, 1):
        place = f'{where}: "global options" {number}'
        options = dict(_object(item, place))
        host, port = str(options.pop("hostname", None)), str(options.pop("port", None))
        by_client[(host, port)] = _options(options, place)
    return {}, by_client


def fio_json_results(text: str) -> list[ParseResult]:
    """One result per group (stonewall, new_group), and per client and group in fio --client output ("All
    clients" included), in output order."""
    docs, diagnostics = fio_json_documents(text)
    if not docs:
        raise ParseError(
            f"Expected fio JSON output (a '{{' followed by a \"fio version\" key); found none in "
            f"{len(text.splitlines())} lines starting {excerpt(text)}."
        )
    docs = [_with_jobs(doc) for doc in docs]
    labels = [f"fio JSON document {n} of {len(docs)}" for n in range(1, len(docs) + 1)]
    labels[-1] = "the fio JSON document" if len(docs) == 1 else "the last fio JSON document"
    for doc, label in zip(docs[:-1], labels, strict=False):
        _checked_jobs(doc, label, status=True)
    if any(fio_fill.is_fill(job) for job in _checked_jobs(docs[-1], labels[-1])):
        # A preconditioning fill ran first: the measured job alone is the result, the fill goes apart.
        fill = docs[-1]
        docs = [fio_fill.measured_only(doc) for doc in docs]
        return [_with_fill(result, fill, labels[-1]) for result in _results(docs, labels, diagnostics)]
    return _results(docs, labels, diagnostics)


def _with_fill(result: ParseResult, final: dict[str, Any], where: str) -> ParseResult:
    """result with summary["precondition"] (fio_fill.summary_of) and the fill's errors among its own."""
    result.summary["precondition"] = fio_fill.summary_of(final)
    messages = _errno_messages(result.diagnostics)
    for index, job in enumerate(final["jobs"]):
        if fio_fill.is_fill(job) and (errno := _errno(job, f"{where}, job {index + 1}")):
            result.job_errors.append(
                {"job": job.get("jobname"), "index": index, "errno": errno, "message": messages.get(errno)}
            )
    return result


def _results(docs: list[dict[str, Any]], labels: list[str], diagnostics: list[str]) -> list[ParseResult]:
    final, where = docs[-1], labels[-1]
    jobs = _checked_jobs(final, where)
    global_options, client_options = _global_options(final, where)
    clients = "client_stats" in final and final["jobs"] is final["client_stats"]
    diagnostics = list(diagnostics)
    keys = _client_keys(jobs, diagnostics) if clients else [None] * len(jobs)
    parts: dict[tuple[str | None, Any], list[int]] = {}
    for index, (job, client) in enumerate(zip(jobs, keys, strict=True)):
        parts.setdefault((client, job.get("groupid")), []).append(index)
    if not parts:
        parts[(None, None)] = []
    labeller = part_labeller(list(parts))
    results: list[ParseResult] = []
    for key, members in parts.items():
        if key[0] == "All clients":  # it prints no options: those of the clients in its group
            source = [
                i for (client, group), m in parts.items() if client != "All clients" and group == key[1] for i in m
            ]
        else:
            source = members
        options = [
            {**global_options, **client_options.get(_host(jobs[i]), {}), **(jobs[i].get("job options") or {})}
            for i in source
        ] or [global_options]
        rw = same_or_none([o.get("rw", o.get("readwrite")) for o in options])
        label = labeller(key[0], key[1], rw)
        # A client's disks are those its entries name; "All clients" and a plain run keep every disk.
        host = _host(jobs[members[0]]) if clients and members and key[0] != "All clients" else None
        result = _part_result(docs, labels, members, options, source, label, diagnostics, host)
        if key[0] == "All clients":
            counted = [r.summary["processes"] for r, k in zip(results, parts, strict=False) if k[1] == key[1]]
            result.summary["processes"] = sum(counted) if counted and None not in counted else None
        results.append(result)
    return results


def _part_result(
    docs: list[dict[str, Any]],
    labels: list[str],
    members: list[int],
    options: list[dict[str, str]],
    source: list[int],
    label: str,
    all_diagnostics: list[str],
    disk_host: tuple[str, str] | None = None,
) -> ParseResult:
    """The result of the entries members of the last document (options: those of the entries source)."""
    final, where = docs[-1], labels[-1]
    every = final["jobs"]
    jobs = [every[i] for i in members]
    diagnostics = list(all_diagnostics)
    messages = _errno_messages(diagnostics)
    job_errors = [
        {"job": every[index].get("jobname"), "index": index, "errno": errno, "message": messages.get(errno)}
        for index in members
        if (errno := _errno(every[index], f"{where}, job {index + 1}"))
    ]

    def merged(direction: str) -> dict[str, Any] | None:
        return merge_direction(
            [
                stats
                for index in members
                if (
                    stats := _json_direction(
                        every[index].get(direction) or {}, f'{where}, job {index + 1}: "{direction}"'
                    )
                )
            ]
        )

    read, write, total = merged("read"), merged("write"), None
    mixed = None if read or write else merged("mixed")
    if mixed:
        # unified_rw_reporting=mixed reports one "mixed" direction instead of read and write.
        total = {"iops": mixed["iops"], "bw_bytes_per_s": mixed["bw_bytes_per_s"]}
    printed: dict[str, Any] = {}
    if len(jobs) == 1:  # several entries print no figure for the group, only their own
        for direction, shown in (("read", read), ("write", write), ("total", mixed)):
            if shown:
                printed[direction] = _printed(jobs[0].get("mixed" if direction == "total" else direction) or {})

    def agreed(pick: Any) -> Any:
        return same_or_none([pick(opts) for opts in options])

    # fio takes only these two kb_base values; under another, what ran is unknown, and so is the size.
    block_size = agreed(
        lambda o: _option_bytes(o.get("bs", o.get("blocksize")), _KB_BASES.get(o.get("kb_base", "1024").strip()))
    )
    every_job = final["jobs"]
    # Some fio 2.x JSON has no "job options": rw and bs are then unknown, not fio's defaults (read, 4k).
    options_known = any("job options" in every_job[i] for i in source) or any(
        name in options[0] for name in ("rw", "readwrite")
    )
    if options_known and not any(
        name in opts for opts in options for name in ("bs", "blocksize", "bsrange", "bssplit")
    ):
        block_size = 4096  # fio's default block size when none is set
    direct = agreed(lambda o: o["direct"] not in ("0", "false") if "direct" in o else None)
    read_percent = checked_read_percent(
        agreed(lambda o: _mode_read_percent(o.get("rw", o.get("readwrite")), o)) if options_known else None,
        read,
        write,
        diagnostics,
    )
    workload = make_workload(
        rw=agreed(lambda o: o.get("rw", o.get("readwrite"))),
        block_size=agreed(lambda o: o.get("bs", o.get("blocksize"))),
        iodepth=agreed(lambda o: _whole_option(o.get("iodepth"))),
        numjobs=agreed(lambda o: _whole_option(o.get("numjobs"))),
        read_percent=read_percent,
        ioengine=agreed(lambda o: o.get("ioengine")),
    )
    single = len(members) == len(every_job)
    cpu, printed["cpu"] = fio_own_view.result_cpu(
        [fio_own_view.json_cpu(every[i], f"{where}, job {i + 1}") for i in members]
    )
    disks, printed["disk_util"] = fio_own_view.json_disks(final.get("disk_util"), where, disk_host)
    summary = make_summary(
        tool="fio",
        tool_version=str(final.get("fio version", "")).removeprefix("fio-") or None,
        read=read,
        write=write,
        total=total,
        processes=_processes(jobs, options) if jobs and len(options) == len(jobs) else None,
        block_size_bytes=block_size,
        read_percent=read_percent,
        direct=direct,
        runtime_s=_clock_ms(_job_clock_entries(jobs, where)) / 1000 if jobs else None,
        samples=_samples(docs, labels, {"read": read is not None, "write": write is not None}) if single else [],
        printed=printed,
        workload=workload,
        cpu=cpu,
        disk_util=disks,
        ios=_completed_ios(jobs, where),
    )
    settings = dict(options[0])
    bins = latency_bins({"jobs": jobs}, where) or None
    return ParseResult(
        "fio-json", summary, diagnostics, job_errors, settings, bins, label=label, steadystate=steadystate(jobs, where)
    )


def _completed_ios(jobs: list[dict[str, Any]], where: str) -> float | None:
    """Every I/O the entries completed, all directions (a trim costs CPU too; "mixed" only where it stands for
    them, unified_rw_reporting=both prints it beside them); None when fio printed no count."""
    counts = []
    for index, job in enumerate(jobs, 1):
        directions = [d for d in ("read", "write", "trim") if job.get(d)] or [d for d in ("mixed",) if job.get(d)]
        counts += [_job_amount(job, d, "total_ios", f"{where}, job {index}") for d in directions]
    return None if not counts or None in counts else sum(c for c in counts if c is not None)


def parse_fio_json(text: str) -> ParseResult:
    """The output's one result; for several groups or clients, the one fio_common.representative picks."""
    return representative(fio_json_results(text))
