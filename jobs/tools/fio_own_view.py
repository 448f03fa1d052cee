"""fio's own view of a run beside its figures (docs/reference/fio-output.md#cpu-and-disk-util): its `cpu` line
(usr/sys share of one CPU, context switches, page faults) and its disk util lines, read from JSON, the text
report and terse lines into summary["cpu"] and summary["disk_util"] (pure).

Whether fio was the bottleneck is the first question to ask of a number: a job whose usr + sys nears 100 % of
a CPU measured fio, and a device near util=100 % measured the device. Everything here is as fio printed it;
what it did not print is None (or, for a disk's optional fields, absent), never estimated.
"""

from __future__ import annotations

import re
from typing import Any

from jobs.tools.summary import ParseError, amount, excerpt, real, whole

CPU_KEYS = ("usr_percent", "sys_percent", "ctx", "majf", "minf", "job_runtime_ms")
# fio 1.x printed "usr=…%, sys=…%, ctx=N" alone; majf and minf came later.
_TEXT_CPU = re.compile(
    r"\bcpu\s*:\s*usr=(?P<usr>[0-9]+(?:\.[0-9]+)?)%,\s*sys=(?P<sys>[0-9]+(?:\.[0-9]+)?)%,\s*ctx=(?P<ctx>[0-9]+)"
    r"(?:,\s*majf=(?P<majf>[0-9]+),\s*minf=(?P<minf>[0-9]+))?"
)
_DISK_STATS = re.compile(r"\bDisk stats \(read/write\):")
# "  vda: ios=49546/21160, merge=0/0, ticks=1522/539, in_queue=2062, util=69.69%", 3.36+ "sectors=a/b" after
# ios, md/dm devices ", aggrios=a/b, aggrmerge=a/b, aggrticks=a/b, aggrin_queue=n, aggrutil=x%" (diskutil.c).
_DISK_LINE = re.compile(
    r"\s*(?P<name>[^\s:]{1,255}): "
    r"(?P<pairs>ios=[0-9]+/[0-9]+,[^\n]{0,600}?\butil=[0-9.]+%(?:, aggr[^\n]{0,400}?aggrutil=[0-9.]+%)?)"
)
_PAIR = re.compile(r"(?P<key>\w+)=(?P<first>[0-9]+(?:\.[0-9]+)?)(?:/(?P<second>[0-9]+))?%?")
# Text key -> (summary key of its first value, of its second): "ios=a/b" is read then write.
_TEXT_DISK_KEYS: dict[str, tuple[str, str | None]] = {
    "ios": ("read_ios", "write_ios"),
    "sectors": ("read_sectors", "write_sectors"),
    "merge": ("read_merges", "write_merges"),
    "ticks": ("read_ticks", "write_ticks"),
    "in_queue": ("in_queue", None),
    "util": ("util_percent", None),
    "aggrios": ("aggr_read_ios", "aggr_write_ios"),
    "aggrsectors": ("aggr_read_sectors", "aggr_write_sectors"),
    "aggrmerge": ("aggr_read_merges", "aggr_write_merges"),
    "aggrticks": ("aggr_read_ticks", "aggr_write_ticks"),
    "aggrin_queue": ("aggr_in_queue", None),
    "aggrutil": ("aggr_util_percent", None),
}
# JSON key -> summary key. fio spells the aggregate's write merges "aggr_write_merge" (diskutil.c).
_JSON_DISK_KEYS = {
    "read_ios": "read_ios",
    "write_ios": "write_ios",
    "read_sectors": "read_sectors",
    "write_sectors": "write_sectors",
    "read_merges": "read_merges",
    "write_merges": "write_merges",
    "read_ticks": "read_ticks",
    "write_ticks": "write_ticks",
    "in_queue": "in_queue",
    "util": "util_percent",
    "aggr_read_ios": "aggr_read_ios",
    "aggr_write_ios": "aggr_write_ios",
    "aggr_read_merges": "aggr_read_merges",
    "aggr_write_merge": "aggr_write_merges",
    "aggr_write_merges": "aggr_write_merges",
    "aggr_read_ticks": "aggr_read_ticks",
    "aggr_write_ticks": "aggr_write_ticks",
    "aggr_in_queue": "aggr_in_queue",
    "aggr_util": "aggr_util_percent",
}
_TERSE_DISK_KEYS = (
    "read_ios", "write_ios", "read_merges", "write_merges", "read_ticks", "write_ticks", "in_queue", "util_percent",
)  # fmt: skip


def make_cpu(
    usr_percent: float | None,
    sys_percent: float | None,
    ctx: int | None,
    majf: int | None,
    minf: int | None,
    job_runtime_ms: float | None = None,
) -> dict[str, Any]:
    """summary["cpu"]: fio's usr and sys (percent of one CPU, averaged over a group's members), context switches,
    major and minor page faults, and job_runtime_ms, the clock fio divided by (JSON's job_runtime, fio 3.8+)."""
    values = (usr_percent, sys_percent, ctx, majf, minf, job_runtime_ms)
    return dict(zip(CPU_KEYS, values, strict=True))


def combined_cpu(entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The cpu of several job entries as fio's group_reporting would print it (stat.c sum_thread_stats adds up
    usr_time, sys_time, total_run_time, ctx, majf and minf): the percentages weighted by each entry's clock,
    which only JSON's job_runtime gives; without it they are None, the counts still summed."""
    if not entries:
        return None
    if len(entries) == 1:
        return entries[0]

    def summed(key: str) -> Any:
        values = [entry[key] for entry in entries]
        return None if None in values else sum(values)

    clock = summed("job_runtime_ms")
    shares: dict[str, float | None] = {"usr_percent": None, "sys_percent": None}
    if clock:
        for key in shares:
            if all(entry[key] is not None for entry in entries):
                shares[key] = sum(entry[key] * entry["job_runtime_ms"] for entry in entries) / clock
    return make_cpu(shares["usr_percent"], shares["sys_percent"], summed("ctx"), summed("majf"), summed("minf"), clock)


CpuLine = tuple[dict[str, Any] | None, dict[str, str] | None]


def result_cpu(lines: list[CpuLine]) -> CpuLine:
    """A result's cpu and printed cpu from its job entries' cpu lines: the one fio printed for a single entry
    (a group_reporting result), combined_cpu of several with nothing printed; (None, None) when an entry has
    no cpu line."""
    if not lines or any(cpu is None for cpu, _ in lines):
        return None, None
    return combined_cpu([cpu for cpu, _ in lines if cpu is not None]), lines[0][1] if len(lines) == 1 else None


def printed_cpu(usr: str, sys: str, ctx: str, majf: str | None, minf: str | None) -> dict[str, str]:
    """summary["printed"]["cpu"]: fio's tokens as printed ("4.83%", "33.10%", "72885", ...)."""
    tokens = {"usr": f"{usr}%", "sys": f"{sys}%", "ctx": ctx, "majf": majf, "minf": minf}
    return {key: value for key, value in tokens.items() if value is not None}


def printed_disk(disk: dict[str, Any], util: str | None, ios: tuple[str | None, str | None]) -> dict[str, str]:
    """One disk of summary["printed"]["disk_util"]: its name, util and read/write ios as printed (each left out
    when fio did not print it)."""
    printed = {"name": disk["name"]}
    if util is not None:
        printed["util"] = f"{util}%"
    if None not in ios:
        printed["ios"] = "/".join(str(count) for count in ios)
    return printed


# --- JSON ---------------------------------------------------------------------------------------------------


def json_cpu(job: dict[str, Any], where: str) -> CpuLine:
    """A JSON job entry's cpu and its printed tokens; (None, None) when the entry has no usr_cpu and sys_cpu."""
    if "usr_cpu" not in job and "sys_cpu" not in job:
        return None, None
    shares = {key: amount(job.get(key), f'{where}: "{key}"') for key in ("usr_cpu", "sys_cpu")}
    counts = {key: _json_count(job.get(key), f'{where}: "{key}"') for key in ("ctx", "majf", "minf", "job_runtime")}
    cpu = make_cpu(
        shares["usr_cpu"], shares["sys_cpu"], counts["ctx"], counts["majf"], counts["minf"], counts["job_runtime"]
    )
    written = {key: _written(job.get(key)) for key in ("usr_cpu", "sys_cpu", "ctx", "majf", "minf")}
    if written["usr_cpu"] is None or written["sys_cpu"] is None or written["ctx"] is None:
        return cpu, None
    return cpu, printed_cpu(written["usr_cpu"], written["sys_cpu"], written["ctx"], written["majf"], written["minf"])


def json_disks(
    disks: Any, where: str, host: tuple[str, str] | None
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The document's disk_util (those of the client at host in --client output, whose entries name it) and
    their printed util and ios."""
    if disks is None:
        return [], []
    if not isinstance(disks, list):
        raise ParseError(f'{where}: "disk_util" should be a JSON array.')
    kept, printed = [], []
    for number, entry in enumerate(disks, 1):
        place = f'{where}: "disk_util" {number}'
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ParseError(f'{place} should be an object with a "name".')
        if host is not None and "hostname" in entry and (str(entry["hostname"]), str(entry.get("port"))) != host:
            continue
        disk: dict[str, Any] = {"name": entry["name"]}
        if "hostname" in entry:
            disk["host"] = str(entry["hostname"])
        for key, name in _JSON_DISK_KEYS.items():
            if key in entry:
                at = f'{place} "{key}"'
                disk[name] = amount(entry[key], at) if name.endswith("_percent") else _json_count(entry[key], at)
        kept.append(disk)
        ios = (_written(entry.get("read_ios")), _written(entry.get("write_ios")))
        printed.append(printed_disk(disk, _written(entry.get("util")), ios))
    return kept, printed


def _json_count(value: Any, where: str) -> int | None:
    number = amount(value, where)
    if number is None:
        return None
    if not number.is_integer():
        raise ParseError(f"{where} is {excerpt(str(value), 30)}; fio prints it as a whole number.")
    return int(number)


def _written(value: Any) -> str | None:
    """A JSON number as the text had it ("5.266667"), None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return getattr(value, "text", None) or str(value)


# --- text report --------------------------------------------------------------------------------------------


def text_cpu(section: str, where: str) -> CpuLine:
    """The `cpu          : usr=4.83%, sys=33.10%, ctx=72885, majf=0, minf=11` line of one job section."""
    match = _TEXT_CPU.search(section)
    if not match:
        return None, None

    def count(key: str) -> int | None:
        return None if match[key] is None else whole(match[key], f"{where}: cpu {key}=")

    cpu = make_cpu(
        real(match["usr"], f"{where}: cpu usr="),
        real(match["sys"], f"{where}: cpu sys="),
        count("ctx"),
        count("majf"),
        count("minf"),
    )
    return cpu, printed_cpu(match["usr"], match["sys"], match["ctx"], match["majf"], match["minf"])


DiskBlock = tuple[int, list[dict[str, Any]], list[dict[str, str]]]


def text_disk_blocks(text: str) -> list[DiskBlock]:
    """Each `Disk stats (read/write):` block of a text report: where it starts, its disks and their printed util
    and ios. Found once per report, so that a report of thousands of groups is still read in linear time."""
    blocks: list[DiskBlock] = []
    for block in _DISK_STATS.finditer(text):
        disks: list[dict[str, Any]] = []
        printed: list[dict[str, str]] = []
        position = block.end()
        while line := _DISK_LINE.match(text, position):
            disk = _text_disk(line["name"], line["pairs"])
            pairs = {pair["key"]: pair for pair in _PAIR.finditer(line["pairs"])}
            disks.append(disk)
            printed.append(printed_disk(disk, pairs["util"]["first"], (pairs["ios"]["first"], pairs["ios"]["second"])))
            position = line.end()
        blocks.append((block.start(), disks, printed))
    return blocks


def _text_disk(name: str, pairs: str) -> dict[str, Any]:
    disk: dict[str, Any] = {"name": name}
    where = f"Disk stats, {excerpt(name, 40)}"
    for pair in _PAIR.finditer(pairs):
        keys = _TEXT_DISK_KEYS.get(pair["key"])
        if keys is None:
            continue
        first, second = keys
        if first.endswith("_percent"):
            disk[first] = real(pair["first"], f"{where}: {pair['key']}=")
            continue
        if not pair["first"].isdigit():
            # fio prints counts as whole numbers: "merge=0.00/0" is not its output.
            raise ParseError(f"{where}: {pair['key']}={pair['first']} is not a whole number, as fio prints a count.")
        disk[first] = whole(pair["first"], f"{where}: {pair['key']}=")
        if second and pair["second"] is not None:
            disk[second] = whole(pair["second"], f"{where}: {pair['key']}=")
    return disk


# --- terse --------------------------------------------------------------------------------------------------


def terse_cpu(fields: list[str], start: int | None) -> CpuLine:
    """The `usr%;sys%;ctx;majf;minf` fields at start, when they have that shape."""
    if start is None or not _terse_cpu_at(fields, start):
        return None, None
    usr, sys, ctx, majf, minf = (field.rstrip("%") for field in fields[start : start + 5])
    where = f"terse field {start + 1}"
    cpu = make_cpu(real(usr, where), real(sys, where), whole(ctx, where), whole(majf, where), whole(minf, where))
    return cpu, printed_cpu(usr, sys, ctx, majf, minf)


def terse_cpu_start(fields: list[str], candidates: tuple[int, ...]) -> int | None:
    """Where the cpu fields begin: the first candidate holding `usr%;sys%;ctx;majf;minf`. (Terse version 2 from
    fio 3.x carries a trim block that fio 2.x's did not, so its cpu fields sit at one of two places.)"""
    return next((start for start in candidates if _terse_cpu_at(fields, start)), None)


def _terse_cpu_at(fields: list[str], start: int) -> bool:
    if len(fields) < start + 5:
        return False
    shares, counts = fields[start : start + 2], fields[start + 2 : start + 5]
    return all(re.fullmatch(r"[0-9]+(?:\.[0-9]+)?%", s) for s in shares) and all(
        re.fullmatch(r"[0-9]{1,20}", c) for c in counts
    )


def terse_disks(fields: list[str], start: int) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The disk util fields from start: `name;read_ios;write_ios;read_merges;write_merges;read_ticks;write_ticks;
    in_queue;util%`, each followed by `slaves;` and the aggregate's eight fields for an md or dm device."""
    disks: list[dict[str, Any]] = []
    printed: list[dict[str, str]] = []
    position = start
    while _terse_disk_at(fields, position):
        name, values = fields[position], fields[position + 1 : position + 9]
        disk: dict[str, Any] = {"name": name, **_terse_values(values, "", position)}
        position += 9
        if position < len(fields) and fields[position] == "slaves" and _terse_values_at(fields, position + 1):
            disk.update(_terse_values(fields[position + 1 : position + 9], "aggr_", position + 1))
            position += 9
        disks.append(disk)
        printed.append(printed_disk(disk, values[7].rstrip("%"), (values[0], values[1])))
    return disks, printed


def _terse_disk_at(fields: list[str], position: int) -> bool:
    return (
        position < len(fields)
        and bool(re.fullmatch(r"[^\s;%=]{1,255}", fields[position]))
        and not fields[position].isdigit()
        and _terse_values_at(fields, position + 1)
    )


def _terse_values_at(fields: list[str], position: int) -> bool:
    values = fields[position : position + 8]
    return (
        len(values) == 8
        and all(re.fullmatch(r"[0-9]{1,20}", v) for v in values[:7])
        and bool(re.fullmatch(r"[0-9]+(?:\.[0-9]+)?%", values[7]))
    )


def _terse_values(values: list[str], prefix: str, position: int) -> dict[str, Any]:
    where = f"terse field {position + 1}"
    result: dict[str, Any] = {
        f"{prefix}{key}": whole(v, where) for key, v in zip(_TERSE_DISK_KEYS[:7], values[:7], strict=True)
    }
    result[f"{prefix}util_percent"] = real(values[7].rstrip("%"), where)
    return result
