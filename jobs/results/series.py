"""The chart data of a disk and of a run: plain functions of a model row and the query parameters, which the
chart pages (jobs/results/pages.py) and the API (jobs/disks/api.py, jobs/runs/api.py) both call.

A disk's series: its successful runs per profile against its limits, downsampled on the server (min-max per
bucket, from the per-run results table or, for long ranges, the per-day rollup). A run's series: its samples
(LTTB), its latency percentiles and histogram, and its limits at launch."""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from django.db.models import Count, Max, Min, Q, QuerySet, Sum
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from jobs import figures, limits, timeseries
from jobs.models import Disk, HostSample, Run, RunResult, RunResultDay, RunSample, changes
from jobs.results import day_rows
from jobs.results.day_rows import AT, D
from jobs.timeseries import CHART_PERCENTILES, DAY_POINTS, DIRECTIONS, SERIES

# Shortest first: without a range asked for, the first that fits the runs is drawn (timeseries.fitting_range).
RANGES = {"24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30), "all": None}


PERCENTILES = (("p50", "p50"), ("p90", "p90"), ("p95", "p95"), ("p99", "p99"), ("p99.9", "p99_9"), ("max", "max"))


HISTOGRAM_BINS = 40


# Up to DAY_BUCKETS_ABOVE runs, a range is drawn from its result rows (some 50 ms per 10,000 runs); beyond, from
# its days when they are enough for half the points asked (500 days at 2,000 points per series), and beyond
# DAYS_ALWAYS_ABOVE runs from its days however few: reading every result would take a second or more.
DAY_BUCKETS_ABOVE = 10_000


DAYS_ALWAYS_ABOVE = 50_000


class BadRequest(ValueError):
    pass


def disk_series(disk: Disk, params: Mapping[str, str]) -> dict[str, Any]:
    """params: range (24h, 7d, 30d, all, custom with from/to; none: the shortest that fits the runs), profile
    (id or name), points, steady (only: leave out runs not in steady state and those not checked), measured
    (disk: leave out runs with a verdict against their number, docs/user-guide/verdicts.md). BadRequest names the
    parameter and the fix."""
    wanted = _profile_filter(params.get("profile", ""))
    steady_only = _steady_only(params.get("steady"))
    disk_only = _disk_only(params.get("measured"))
    fitted = not params.get("range")
    start, end, range_name = _time_range(params, _fitting_range(disk, wanted) if fitted else "")
    points = _max_points(params.get("points"))

    profiles, in_range = _profiles(disk, start, end, wanted)
    known = {p["key"]: p for p in profiles}
    # The day rollups count every run, steady or not, judged or not, so a filtered chart is drawn from the results.
    if not steady_only and not disk_only and _from_days(in_range, points):
        days = day_rows.day_columns(disk, start, end, wanted)
        runs = sum(sum(keys[D["runs"]]) for _, _, keys, _ in days)
        series = _series_from_days(days, known, points)
    else:
        rows = _result_rows(disk, start, end, wanted | ({"steady": True} if steady_only else {}), disk_only=disk_only)
        runs = len(rows)
        groups = _by_profile(rows, R["profile_id"], R["profile_name"], R["finished_ms"])
        series = [_series_from_results(known[key], group, points) for key, group in groups.items() if key in known]
    series.sort(key=lambda s: s["profile"]["name"].lower())
    found, reason = disk.limits_or_reason()
    return {
        "disk": {"id": disk.pk, "label": disk.label, "name": str(disk)},
        "range": {
            "name": range_name,
            "fitted": fitted,
            "from": start and start.isoformat(),
            "to": end and end.isoformat(),
        },
        "profile": params.get("profile", ""),
        "steady": "only" if steady_only else "all",
        "measured": "disk" if disk_only else "all",
        "max_points": points,
        "downsampling": "minmax",
        "units": {
            "x": "ms since the Unix epoch (UTC), the run's finish",
            "iops": "IO/s",
            "latency": "µs (completion latency)",
            "efficiency": "measured total IOPS ÷ the run's theoretical IOPS at its block size (1 = 100%)",
            "steady": "per point: true (steady state), false (not steady), null (not checked)",
            "warnings": "per point: how many warnings the run carries (its page says what they are)",
        },
        "limits": _limits_json(found),
        "limits_error": reason,
        "profiles": profiles,
        "runs": runs,
        "series": series,
        # Vertical markers: level shifts found in the disk's results, and events people noted.
        "marks": changes.chart_marks(disk, start, end),
    }


def _fitting_range(disk: Disk, wanted: dict[str, Any]) -> str:
    """The shortest range holding every run of the disk (of the profile asked for) or enough of them."""
    now = timezone.now()
    within = {name: Count("pk", filter=Q(finished_at__gte=now - span)) if span else Count("pk")
              for name, span in RANGES.items()}  # fmt: skip
    counts = RunResult.objects.filter(disk=disk, **wanted).aggregate(**{f"in_{n}": c for n, c in within.items()})
    return timeseries.fitting_range({name: counts[f"in_{name}"] for name in RANGES})


def _time_range(params: Any, fitted: str) -> tuple[datetime | None, datetime | None, str]:
    name = fitted or params.get("range")
    if name == "custom":
        start, end = _moment(params.get("from"), "from"), _moment(params.get("to"), "to", end_of_day=True)
        if start and end and end < start:
            raise BadRequest("'to' is before 'from'; swap them or pick another range.")
        return start, end, name
    if name not in RANGES:
        raise BadRequest(f"Unknown range {name!r}; use one of 24h, 7d, 30d, all, custom.")
    span = RANGES[name]
    return (timezone.now() - span if span else None), None, name


def _moment(text: str | None, field: str, end_of_day: bool = False) -> datetime | None:
    """An ISO date or date-time; naive values are in the server's time zone, a bare 'to' date ends that day."""
    if not text:
        return None
    moment: datetime | None
    try:
        # A bare date first: parse_datetime would read it as midnight, cutting a 'to' day short.
        day = parse_date(text) if len(text) == 10 else None
        if day:
            moment = datetime.combine(day, datetime.max.time() if end_of_day else datetime.min.time())
        else:
            moment = parse_datetime(text)
    except ValueError:
        moment = None
    if moment is None:
        raise BadRequest(f"'{field}' is not an ISO date or date-time: {text!r} (e.g. 2024-05-01 or 2024-05-01T08:00Z).")
    return timezone.make_aware(moment) if timezone.is_naive(moment) else moment


def _steady_only(value: str | None) -> bool:
    if value in (None, "", "all"):
        return False
    if value != "only":
        raise BadRequest(f"'steady' must be 'only' (steady runs only) or 'all'; got {value!r}.")
    return True


def _disk_only(value: str | None) -> bool:
    if value in (None, "", "all"):
        return False
    if value != "disk":
        raise BadRequest(f"'measured' must be 'disk' (leave out runs with a verdict) or 'all'; got {value!r}.")
    return True


def _profile_filter(value: str) -> dict[str, Any]:
    """The profile asked for, as field lookups that fit both RunResult and RunResultDay (none: every one)."""
    value = value.strip()
    if not value:
        return {}
    return {"profile_id": int(value)} if _whole_number(value) else {"profile_name": value}


def _whole_number(text: str) -> bool:
    # isdigit() alone takes '²' and other digits int() refuses; 18 digits stay within a bigint.
    return text.isascii() and text.isdigit() and len(text) <= 18


def _max_points(value: str | None) -> int:
    if not value:
        return timeseries.MAX_POINTS
    if not _whole_number(value) or not 10 <= int(value) <= timeseries.MAX_POINTS:
        raise BadRequest(f"'points' must be a whole number from 10 to {timeseries.MAX_POINTS}.")
    return int(value)


def _profile_key(profile_id: int | None, name: str) -> str:
    # Runs of a profile keep its id across renames; imports and runs of deleted profiles have only a name.
    return str(profile_id) if profile_id is not None else name


def _profiles(
    disk: Disk, start: datetime | None, end: datetime | None, wanted: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every profile with finished runs on the disk, whatever the range, so that the filter never loses one;
    and, per profile id and name asked for, how many runs the days of the range hold (those at its ends
    whole) and the first and last of those days. One grouped query over the disk's days."""
    days = Q()
    if start:
        days &= Q(day__gte=timeseries.utc_day(timeseries.epoch_ms(start)))
    if end:
        days &= Q(day__lte=timeseries.utc_day(timeseries.epoch_ms(end)))
    rows = (
        RunResultDay.objects.filter(disk=disk)
        .values("profile_id", "profile_name")
        .annotate(
            all_time=Sum("runs"),
            last_ms=Max("last_ms"),
            in_range=Sum("runs", filter=days),
            first_day=Min("day", filter=days),
            last_day=Max("day", filter=days),
        )
        .order_by()
    )
    merged: dict[str, dict[str, Any]] = {}
    in_range: list[dict[str, Any]] = []
    # Read as plain dicts: `wanted` names its fields at run time.
    for row in cast("QuerySet[RunResultDay, dict[str, Any]]", rows):
        key = _profile_key(row["profile_id"], row["profile_name"])
        entry = merged.setdefault(key, {"key": key, "id": row["profile_id"], "name": "", "runs": 0, "last_ms": -1})
        entry["runs"] += row["all_time"]
        if row["last_ms"] > entry["last_ms"]:
            entry["last_ms"], entry["name"] = row["last_ms"], row["profile_name"] or "(no profile)"
        if row["in_range"] and all(row[field] == value for field, value in wanted.items()):
            in_range.append(row)
    profiles = sorted(merged.values(), key=lambda p: p["name"].lower())
    for entry in profiles:
        entry["last_finished_at"] = _iso_from_ms(entry.pop("last_ms"))
    return profiles, in_range


def _iso_from_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat()


def _from_days(in_range: list[dict[str, Any]], points: int) -> bool:
    runs = sum(row["in_range"] for row in in_range)
    if runs <= DAY_BUCKETS_ABOVE:
        return False
    days = max(row["last_day"] for row in in_range) - min(row["first_day"] for row in in_range) + 1
    return days >= points // 4 or runs > DAYS_ALWAYS_ABOVE


def _by_profile(rows: list[tuple[Any, ...]], id_at: int, name_at: int, order_at: int) -> dict[str, list[tuple]]:
    """Rows sorted by (profile id, name, order) -> {profile key: rows in order}."""
    groups: dict[str, list[tuple[Any, ...]]] = {}
    for (profile_id, name), group in itertools.groupby(rows, key=operator.itemgetter(id_at, name_at)):
        key = _profile_key(profile_id, name)
        if key in groups:
            # A renamed profile: its rows under either name, merged back into order.
            groups[key] = sorted([*groups[key], *group], key=operator.itemgetter(order_at))
        else:
            groups[key] = list(group)
    return groups


def _series_json(
    profile: dict[str, Any], runs: int, downsampled: bool, latest: tuple[Any, ...] | None, drawn: dict[str, dict]
) -> dict[str, Any]:
    """One profile's series (`drawn`: SERIES name -> points), with the limits and block size of its latest run."""
    latest = latest or (None,) * len(RESULT_COLUMNS)
    return {
        "profile": {key: profile[key] for key in ("key", "id", "name")},
        "runs": runs,
        "downsampled": downsampled,
        "block_size_bytes": latest[R["block_size_bytes"]],
        # The lines drawn: the limits of the latest run in the range, at its block size.
        "limits": {"baseline_iops": latest[R["limit_iops"]], "burst_iops": latest[R["burst_iops"]]},
        "iops": {name: drawn[name] for name in ("total", "read", "write")},
        "latency_us": {d: {p: drawn[f"{d}_{p}"] for p in CHART_PERCENTILES} for d in DIRECTIONS},
    }


def _efficiency(ys: Sequence[float], limits_iops: Sequence[float | None]) -> list[float | None]:
    if all(limits_iops):
        # In C: a disk's runs all have a limit, unless its spec could never be evaluated.
        return list(map(round, map(operator.truediv, ys, limits_iops), itertools.repeat(4)))
    return [round(y / limit, 4) if limit else None for y, limit in zip(ys, limits_iops, strict=True)]


RESULT_COLUMNS = (
    "run_id", "finished_ms", "profile_id", "profile_name", *SERIES.values(), "block_size_bytes", "limit_iops",
    "burst_iops", "steady", "warning_count",
)  # fmt: skip


R = {name: index for index, name in enumerate(RESULT_COLUMNS)}


def _result_rows(
    disk: Disk, start: datetime | None, end: datetime | None, wanted: dict[str, Any], *, disk_only: bool = False
) -> list[tuple]:
    results = RunResult.objects.filter(disk=disk, **wanted)
    if disk_only:
        results = results.exclude(measured_disk=False)  # runs not judged (older, imported) stay
    if start:
        results = results.filter(finished_at__gte=start)
    if end:
        results = results.filter(finished_at__lte=end)
    return list(results.order_by("profile_id", "profile_name", "finished_ms", "run_id").values_list(*RESULT_COLUMNS))


def _series_from_results(profile: dict[str, Any], rows: list[tuple[Any, ...]], points: int) -> dict[str, Any]:
    # Transposed in C: a Python loop over 10,000 rows per series would cost more than the query.
    columns = dict(zip(RESULT_COLUMNS, zip(*rows, strict=True), strict=True))
    xs, ids = columns["finished_ms"], columns["run_id"]
    drawn = {}
    for name, column in SERIES.items():
        ys = columns[column]
        kept = _kept(ys, points)
        pick = _picker(kept)
        drawn[name] = {"x": pick(xs), "y": pick(ys), "run": pick(ids), "steady": pick(columns["steady"]),
                       "warnings": pick(columns["warning_count"])}  # fmt: skip
        if name == "total":
            drawn[name]["limit"] = pick(columns["limit_iops"])
            drawn[name]["efficiency"] = _efficiency(drawn[name]["y"], drawn[name]["limit"])
    return _series_json(profile, len(rows), len(rows) > points, rows[-1], drawn)


def _kept(ys: Sequence[float | None], points: int) -> list[int]:
    """Indices of the numbers of `ys` that minmax keeps (None, a missing value, is never drawn)."""
    if None not in ys:
        return timeseries.minmax_indices(cast("Sequence[float]", ys), points)  # no None in it, just checked
    present = [i for i, y in enumerate(ys) if y is not None]
    return [present[i] for i in timeseries.minmax_indices([y for y in ys if y is not None], points)]


def _picker(indices: list[int]) -> Any:
    """A function that picks the kept items out of a column, with itemgetter in C."""
    if len(indices) > 1:
        getter = operator.itemgetter(*indices)
        return lambda values: list(getter(values))
    return lambda values: [values[i] for i in indices]


def _series_from_days(days: list[day_rows.ProfileDays], known: dict[str, dict], points: int) -> list[dict[str, Any]]:
    groups = {key: profile for key, profile in _days_by_profile(days).items() if key in known}
    # The first and the last run of each profile, which every series keeps as minmax does (a profile renamed on
    # the range's first or last day has two of each to choose from), in one query.
    ends = {}
    for key, (keys, _) in groups.items():
        on = keys[D["day"]]
        ends[key] = (
            list(itertools.compress(keys[D["first_run"]], map(operator.eq, on, itertools.repeat(on[0])))),
            list(itertools.compress(keys[D["last_run"]], map(operator.eq, on, itertools.repeat(on[-1])))),
        )
    ids = [pk for firsts, lasts in ends.values() for pk in (*firsts, *lasts)]
    found = {row[R["run_id"]]: row for row in RunResult.objects.filter(pk__in=ids).values_list(*RESULT_COLUMNS)}
    by_time = operator.itemgetter(R["finished_ms"], R["run_id"])
    # Two points a day at most, and room for the first and last run.
    buckets = (points - 2) // 2
    drawn_days = {key: _coarsened(keys, packed, buckets) for key, (keys, packed) in groups.items()}
    spans, at = [], 0
    for _, packed in drawn_days.values():
        spans.append((at, at + len(packed)))
        at += len(packed)
    drawn = timeseries.day_series_points([day for _, packed in drawn_days.values() for day in packed], spans)
    out = []
    for key, series_points in zip(drawn_days, drawn, strict=True):
        # A run deleted since its day was written (in the admin) has no result left to draw.
        first = min((found[pk] for pk in ends[key][0] if pk in found), key=by_time, default=None)
        last = max((found[pk] for pk in ends[key][1] if pk in found), key=by_time, default=None)
        runs = sum(groups[key][0][D["runs"]])
        for name, series_drawn in series_points.items():
            _with_ends(series_drawn, SERIES[name], first, last)
        total = series_points["total"]
        total["efficiency"] = _efficiency(total["y"], total["limit"])
        out.append(_series_json(known[key], runs, runs > len(total["x"]), last, series_points))
    return out


def _days_by_profile(days: list[day_rows.ProfileDays]) -> dict[str, tuple[day_rows.Columns, list[bytes]]]:
    """The days of each profile key: a renamed profile's under either name merged back into day order."""
    groups: dict[str, tuple[day_rows.Columns, list[bytes]]] = {}
    for profile_id, name, keys, packed in days:
        key = _profile_key(profile_id, name)
        if key in groups:
            rows = [*zip(*groups[key][0], groups[key][1], strict=True), *zip(*keys, packed, strict=True)]
            _, _, keys, packed = day_rows.as_columns(profile_id, name, rows)
        groups[key] = (keys, packed)
    return groups


def _coarsened(keys: day_rows.Columns, packed: list[bytes], buckets: int) -> tuple[day_rows.Columns, list[bytes]]:
    """A profile's days, merged a few at a time when they are more than `buckets`."""
    on = keys[D["day"]]
    if len(on) <= buckets:
        return keys, packed
    (points,) = timeseries.unpack_day_points(packed, [(0, len(packed))])
    rows = list(zip(*keys, *points, strict=True))
    merged = _coarser(rows, on[0], math.ceil((on[-1] - on[0] + 1) / buckets))
    keyed = len(day_rows.DAY_KEY)
    return (
        [list(column) for column in zip(*merged, strict=True)][:keyed],
        [timeseries.pack_day_points(dict(zip(DAY_POINTS, row[keyed:], strict=True))) for row in merged],
    )


def _with_ends(points: dict[str, list[Any]], column_name: str, first: tuple | None, last: tuple | None) -> None:
    """A series' points of days (timeseries.day_series_points) with the first and last run of the range put in
    when they are not among them."""
    column = R[column_name]
    for row, at_end in ((first, False), (last, True)):
        if row is None or row[column] is None:
            continue
        run, y = row[R["run_id"]], row[column]
        if points["run"] and points["run"][-1 if at_end else 0] == run:
            continue
        index = len(points["run"]) if at_end else 0
        values = {"x": row[R["finished_ms"]], "y": y, "run": run, "limit": row[R["limit_iops"]],
                  "steady": row[R["steady"]], "warnings": row[R["warning_count"]]}  # fmt: skip
        for name, items in points.items():
            items.insert(index, values[name])


def _coarser(rows: list[tuple[Any, ...]], day0: int, days: int) -> list[tuple[Any, ...]]:
    """Day rows merged `days` at a time, counted from day0, into rows of the same shape: the lowest and the
    highest of each series across them (the earliest of equals)."""
    out = []
    for _, days_rows in itertools.groupby(rows, key=lambda row: (row[D["day"]] - day0) // days):
        bucket = list(days_rows)
        merged = [*bucket[0][: D["runs"]], sum(row[D["runs"]] for row in bucket), bucket[0][D["first_run"]],
                  bucket[-1][D["last_run"]]]  # fmt: skip
        for series in SERIES:
            at, count = AT[series], len(timeseries.day_point_fields(series))
            runs = [row[i : i + count] for row in bucket for i in (at, at + count) if row[i + 2] is not None]
            if not runs:
                merged += [None] * 2 * count
                continue
            low, high = min(runs, key=operator.itemgetter(1)), max(runs, key=operator.itemgetter(1))
            merged += [*low, *high] if low[0] <= high[0] else [*high, *low]
        out.append(tuple(merged))
    return out


def _disk_limits_or_none(disk: Disk, block_size: Any) -> limits.Limits | None:
    size = int(block_size) if isinstance(block_size, int | float) and block_size >= 1 else None
    return disk.limits_or_reason(block_size=size)[0]


def _limits_json(found: limits.Limits | None) -> dict[str, Any] | None:
    if found is None:
        return None
    return {
        "baseline_iops": found.iops,
        "burst_iops": found.burst_iops,
        "throughput_bytes_per_s": found.throughput_bytes_per_s,
        "burst_throughput_bytes_per_s": found.burst_throughput_bytes_per_s,
        # The unit the limit is published in: a tooltip gives a measured rate in it too.
        "throughput_unit": found.total_throughput_unit,
        "source": found.source,
    }


# What the run chart reads of a run: not its raw output.
RUN_FOR_SERIES = Run.objects.select_related("disk").defer(*Run.BULKY_FIELDS, "progress")


def run_series(run: Run) -> dict[str, Any]:
    summary = run.summary if isinstance(run.summary, dict) else {}
    samples = list(RunSample.of_run(run).order_by("t_s").values_list("t_s", "read_iops", "write_iops"))
    baseline, burst, binding = _run_limits(run, summary)
    total_iops = (summary.get("total") or {}).get("iops")
    return {
        "run": {
            "id": run.pk,
            "state": run.state,
            "final": run.is_final,
            "profile_name": run.profile_name,
            "started_at": _epoch_ms(run.started_at),
            "finished_at": _epoch_ms(run.finished_at),
        },
        "max_points": timeseries.MAX_POINTS,
        "downsampling": "lttb",
        "units": {
            "x": "s since the run started",
            "iops": "IO/s",
            "latency": "µs (completion latency)",
            "histogram": "% of the direction's completions",
        },
        "samples": _sample_series(samples),
        "limits": {"baseline_iops": baseline, "burst_iops": burst, "binding": binding},
        "result": {
            "total_iops": total_iops,
            # The total as the run page's result table shows it first: the tool's printed figure.
            "total_printed": figures.total_iops_shown(summary),
            "efficiency": round(total_iops / baseline, 4) if total_iops and baseline else None,
        },
        "percentiles": _percentile_curve(summary),
        "histogram": _latency_histogram(summary.get("latency_bins_ns")),
        "telemetry": telemetry_series(run),
    }


# The host's figures drawn under the IOPS chart, each a % of its whole (jobs/telemetry/proc.py's sample).
TELEMETRY_LINES = {
    "cpu_busy": "CPU busy (user + system), % of all CPUs",
    "iowait": "CPU iowait, %",
    "steal": "CPU steal, %",
    "busiest": "busiest CPU, % busy",
    "psi_io": "I/O pressure (PSI some), % of the second",
}


def telemetry_series(run: Run) -> dict[str, Any]:
    """The run's host telemetry as lines of {x: seconds since the run started, y: %}: the CPU, the pressure, and
    each device's %util; `count` seconds read (0: none, the chart says why)."""
    seconds = HostSample.of_run(run)
    lines: dict[str, list[dict[str, float]]] = {name: [] for name in TELEMETRY_LINES}
    devices: dict[str, list[dict[str, float]]] = {}
    for second in seconds:
        x = second["t_s"]
        cpu = second.get("cpu") or {}
        figures = {
            "cpu_busy": _sum_of(cpu.get("user"), cpu.get("system")),
            "iowait": cpu.get("iowait"),
            "steal": cpu.get("steal"),
            "busiest": (cpu.get("busiest") or {}).get("busy"),
            "psi_io": (second.get("pressure") or {}).get("io_some"),
        }
        for name, value in figures.items():
            if value is not None:
                lines[name].append({"x": x, "y": value})
        for device, values in (second.get("devices") or {}).items():
            if values.get("util") is not None:
                devices.setdefault(device, []).append({"x": x, "y": values["util"]})
    return {
        "count": len(seconds),
        "lines": {name: {"label": TELEMETRY_LINES[name], "points": points} for name, points in lines.items() if points},
        "devices": {name: {"label": f"{name} %util", "points": points} for name, points in sorted(devices.items())},
        "verdicts": run.verdicts,
    }


def _sum_of(*values: float | None) -> float | None:
    present = [value for value in values if value is not None]
    return round(sum(present), 1) if present else None


def _epoch_ms(moment: datetime | None) -> int | None:
    return round(moment.timestamp() * 1000) if moment else None


def _sample_series(samples: list[tuple[float, float | None, float | None]]) -> dict[str, Any]:
    both = any(s[1] is not None for s in samples) and any(s[2] is not None for s in samples)
    # Total only where both directions were measured in the same second; a one-direction run's total is that
    # direction, which the chart already draws.
    totals = [(t, r + w) for t, r, w in samples if r is not None and w is not None] if both else []
    return {
        "count": len(samples),
        "downsampled": len(samples) > timeseries.MAX_POINTS,
        "read": _lttb(timeseries.series(samples, 0, 1)),
        "write": _lttb(timeseries.series(samples, 0, 2)),
        "total": _lttb(timeseries.series(totals, 0, 1)),
    }


def _lttb(points: Sequence[tuple[Any, ...]]) -> dict[str, list[float]]:
    kept = timeseries.lttb(points)
    return {"x": [p[0] for p in kept], "y": [p[1] for p in kept]}


def _run_limits(run: Run, summary: dict[str, Any]) -> tuple[float | None, float | None, str | None]:
    snapshot = run.limits_snapshot if isinstance(run.limits_snapshot, dict) else {}
    baseline = snapshot.get("effective_iops") or snapshot.get("iops")
    if baseline is not None:
        return baseline, snapshot.get("effective_burst_iops") or snapshot.get("burst_iops"), snapshot.get("binding")
    block_size = summary.get("block_size_bytes") or (run.parameters or {}).get("block_size_bytes")
    found = _disk_limits_or_none(run.disk, block_size)
    if found is None:
        return None, None, None
    return found.effective_iops or found.iops, found.effective_burst_iops or found.burst_iops, found.binding


def _percentile_curve(summary: dict[str, Any]) -> dict[str, Any]:
    curve: dict[str, Any] = {"labels": [label for label, _ in PERCENTILES]}
    for direction in DIRECTIONS:
        clat = ((summary.get(direction) or {}).get("clat_us")) or {}
        values = [clat.get(key) for _, key in PERCENTILES]
        curve[direction] = values if any(v is not None for v in values) else None
    return curve


def _latency_histogram(bins_ns: Any) -> dict[str, Any] | None:
    """fio json+ bins ({direction: {ns: count}}) regrouped into ~40 log-spaced bins shared by both directions."""
    if not isinstance(bins_ns, dict):
        return None
    counts = {
        d: {float(ns): int(n) for ns, n in (bins_ns.get(d) or {}).items() if _is_number(ns) and int(n) > 0}
        for d in DIRECTIONS
    }
    values = [ns for d in DIRECTIONS for ns in counts[d] if ns > 0]
    if not values:
        return None
    edges = timeseries.log_edges(min(values), max(values), HISTOGRAM_BINS)
    out: dict[str, Any] = {"edges_us": [float(f"{edge / 1000:.5g}") for edge in edges]}
    for d in DIRECTIONS:
        total = sum(counts[d].values())
        summed = timeseries.histogram(counts[d], edges) if total else None
        out[d] = (
            {"total": total, "counts": summed, "percent": [round(100 * n / total, 3) for n in summed]}
            if summed
            else None
        )
    return out


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False
