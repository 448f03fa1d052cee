"""JSON for the disk and run charts, downsampled on the server (DESIGN.md decision 8).

A disk may hold 100,000 runs. The series endpoint never loads a Run: one query reads only the numbers the
charts draw, pulled out of the summary and limits JSON by the database, and a time stamp already in epoch
milliseconds, so Python builds neither model instances, nor dicts of whole summaries, nor datetimes; the
columns are then transposed and downsampled with C-level builtins. What remains is the database reading
every run's JSON, which bench/chart_endpoint.py measures.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.db.models import BigIntegerField, Count, F, Field, FloatField, Func, Max, Q
from django.http import HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from django.views.decorators.http import require_GET

from jobs import limits, timeseries
from jobs.models import Disk, Run, RunSample
from jobs.views import _disk_for_user, _team

RANGES = {"24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30), "all": None}
DEFAULT_RANGE = "30d"
DIRECTIONS = ("read", "write")
PERCENTILES = (("p50", "p50"), ("p90", "p90"), ("p95", "p95"), ("p99", "p99"), ("p99.9", "p99_9"), ("max", "max"))
CHART_PERCENTILES = ("p50", "p99", "p99_9")
HISTOGRAM_BINS = 40


class BadRequest(ValueError):
    pass


# ----------------------------------------------------------------------------------------- SQL helpers


class JsonNumber(Func):
    """A number inside a JSON column; NULL when the path is missing (SQLite: or the text found there)."""

    def __init__(self, column: str, *path: str) -> None:
        super().__init__(F(column), output_field=FloatField())
        self.path = path

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        # SQLite: a string where a number belongs comes back as text, which `_numbers` drops. The keys in the
        # path are ours, never the user's.
        column, params = compiler.compile(self.source_expressions[0])
        return f"JSON_EXTRACT({column}, %s)", [*params, "$" + "".join(f'."{key}"' for key in self.path)]

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        column, params = compiler.compile(self.source_expressions[0])
        return _pg_number(column), [*params, list(self.path), list(self.path)]


class JsonNumbers(Func):
    """PostgreSQL: the numbers at several paths of one jsonb column, as one float8[] (NULL where missing).

    A summary holding its per-second samples is TOASTed, and PostgreSQL decompresses a TOASTed value again
    for every operator applied to it: thirteen `#>` cost thirteen decompressions per run. Here the value is
    detoasted once (`|| '{}'` returns the detoasted operand), in a subquery kept apart by OFFSET 0, and every
    path is read from that copy."""

    def __init__(self, column: str, paths: Sequence[Sequence[str]]) -> None:
        super().__init__(F(column), output_field=Field())
        self.paths = [list(path) for path in paths]

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        column, params = compiler.compile(self.source_expressions[0])
        numbers = ", ".join(_pg_number("one.doc") for _ in self.paths)
        # Only the compiled column and fixed fragments go into the text; the paths are parameters.
        sql = f"(SELECT ARRAY[{numbers}] FROM (SELECT {column} || '{{}}'::jsonb AS doc OFFSET 0) AS one)"  # noqa: S608
        return sql, [*params, *(p for path in self.paths for p in (path, path))]


def _pg_number(doc: str) -> str:
    return f"(CASE WHEN jsonb_typeof({doc} #> %s) = 'number' THEN ({doc} #>> %s)::double precision END)"


class EpochMs(Func):
    """A datetime column as whole milliseconds since the Unix epoch."""

    def __init__(self, column: str) -> None:
        super().__init__(F(column), output_field=BigIntegerField())

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        # Django keeps SQLite datetimes as UTC text, which julianday() reads.
        column, params = compiler.compile(self.source_expressions[0])
        return f"CAST(ROUND((julianday({column}) - 2440587.5) * 86400000.0) AS INTEGER)", params

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        column, params = compiler.compile(self.source_expressions[0])
        return f"ROUND(EXTRACT(EPOCH FROM {column}) * 1000)::bigint", params


# ----------------------------------------------------------------------------------------- disk series


# What the disk chart reads of a run: four plain columns first (the code groups rows by them), then numbers
# out of its JSON columns, by name.
KEY_COLUMNS: dict[str, Any] = {
    "id": F("pk"),
    "x": EpochMs("finished_at"),
    "profile_id": F("profile_id"),
    "profile_name": F("profile_name"),
}
COL = {name: index for index, name in enumerate(KEY_COLUMNS)}
JSON_NUMBERS: dict[str, dict[str, tuple[str, ...]]] = {
    "summary": {
        "total": ("total", "iops"),
        "read": ("read", "iops"),
        "write": ("write", "iops"),
        **{f"{d}_{p}": (d, "clat_us", p) for d in DIRECTIONS for p in CHART_PERCENTILES},
        "block_size": ("block_size_bytes",),
    },
    # The run's own limits at its block size, as snapshotted when it was made.
    "limits_snapshot": {
        "limit_effective": ("effective_iops",),
        "limit_iops": ("iops",),
        "burst_effective": ("effective_burst_iops",),
        "burst_iops": ("burst_iops",),
    },
    "parameters": {"block_size_parameters": ("block_size_bytes",)},
}
ColumnName = str | tuple[str, ...]


def run_columns(vendor: str) -> tuple[list[Any], list[ColumnName]]:
    """The expressions to select and the name of each one's value (a tuple of names for an array of them)."""
    expressions, names = list(KEY_COLUMNS.values()), list[ColumnName](KEY_COLUMNS)
    for column, numbers in JSON_NUMBERS.items():
        if vendor == "postgresql":
            expressions.append(JsonNumbers(column, list(numbers.values())))
            names.append(tuple(numbers))
        else:
            expressions.extend(JsonNumber(column, *path) for path in numbers.values())
            names.extend(numbers)
    return expressions, names


NUMBER_TYPES = {int, float, type(None)}


@login_required
@require_GET
def disk_series(request: HttpRequest, pk: int) -> JsonResponse:
    disk = _disk_for_user(request, pk)
    try:
        start, end, range_name = _time_range(request.GET)
        profile_filter = _profile_filter(request.GET.get("profile", ""))
        points = _max_points(request.GET.get("points"))
    except BadRequest as exc:
        return JsonResponse({"error": str(exc)}, status=400)

    finished = Run.objects.filter(disk=disk, state=Run.State.SUCCEEDED, finished_at__isnull=False).order_by()
    runs = finished
    if start:
        runs = runs.filter(finished_at__gte=start)
    if end:
        runs = runs.filter(finished_at__lte=end)
    if profile_filter:
        runs = runs.filter(profile_filter)
    # Grouped by profile in the database (a sort of ids, cheap beside reading the rows), in time within each.
    expressions, names = run_columns(connection.vendor)
    rows = list(runs.order_by("profile_id", "profile_name", "finished_at", "pk").values_list(*expressions))
    # All time and every profile: the rows hold the whole list; otherwise one more (grouped) query.
    everything = start is None and end is None and profile_filter is None
    payload = {
        "disk": {"id": disk.pk, "label": disk.label, "name": str(disk)},
        "range": {"name": range_name, "from": start and start.isoformat(), "to": end and end.isoformat()},
        "profile": request.GET.get("profile", ""),
    }
    profiles = None if everything else _profiles(finished)
    return JsonResponse(payload | series_payload(disk, rows, names, profiles, points))


def series_payload(
    disk: Disk,
    rows: list[tuple[Any, ...]],
    names: list[ColumnName],
    profiles: list[dict[str, Any]] | None,
    points: int,
) -> dict[str, Any]:
    """The charts' series from run rows (columns as `run_columns` names them) sorted by (profile id, name,
    time); `profiles` None: every profile is in the rows. (bench/chart_endpoint.py feeds it other rows.)"""
    groups = _by_profile(rows)
    profiles = _profiles_of(groups) if profiles is None else profiles
    known = {p["key"]: p for p in profiles}
    series = [
        _profile_series(disk, known[key], _columns(group, names), points)
        for key, group in groups.items()
        if key in known
    ]
    series.sort(key=lambda s: s["profile"]["name"].lower())
    return {
        "max_points": points,
        "downsampling": "minmax",
        "units": {
            "x": "ms since the Unix epoch (UTC), the run's finish",
            "iops": "IO/s",
            "latency": "µs (completion latency)",
            "efficiency": "measured total IOPS ÷ the run's theoretical IOPS at its block size (1 = 100%)",
        },
        "limits": _limits_json(_disk_limits_or_none(disk, None)),
        "limits_error": _limits_error(disk),
        "profiles": profiles,
        "runs": len(rows),
        "series": series,
    }


def _time_range(params: Any) -> tuple[datetime | None, datetime | None, str]:
    name = params.get("range") or DEFAULT_RANGE
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


def _profile_filter(value: str) -> Q | None:
    value = value.strip()
    if not value:
        return None
    return Q(profile_id=int(value)) if _whole_number(value) else Q(profile_name=value)


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


def _by_profile(rows: list[tuple[Any, ...]]) -> dict[str, list[tuple[Any, ...]]]:
    """Rows sorted by (profile id, name, time) -> {profile key: rows in time order}."""
    groups: dict[str, list[tuple[Any, ...]]] = {}
    ids, names = COL["profile_id"], COL["profile_name"]
    for (profile_id, name), group in itertools.groupby(rows, key=operator.itemgetter(ids, names)):
        key = _profile_key(profile_id, name)
        if key in groups:
            # A renamed profile: its runs under either name, merged back into time order.
            groups[key] = sorted([*groups[key], *group], key=operator.itemgetter(COL["x"], COL["id"]))
        else:
            groups[key] = list(group)
    return groups


def _profiles_of(groups: dict[str, list[tuple[Any, ...]]]) -> list[dict[str, Any]]:
    out = []
    for key, group in groups.items():
        last = group[-1]
        out.append({
            "key": key, "id": last[COL["profile_id"]], "name": last[COL["profile_name"]] or "(no profile)",
            "runs": len(group), "last_finished_at": _iso_from_ms(last[COL["x"]]),
        })  # fmt: skip
    return sorted(out, key=lambda p: p["name"].lower())


def _iso_from_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat()


def _profiles(finished: Any) -> list[dict[str, Any]]:
    """Every profile with finished runs on the disk, whatever the range, so the filter never loses one."""
    merged: dict[str, dict[str, Any]] = {}
    rows = finished.values("profile_id", "profile_name").annotate(runs=Count("pk"), last=Max("finished_at"))
    for row in rows:
        key = _profile_key(row["profile_id"], row["profile_name"])
        entry = merged.setdefault(key, {"key": key, "id": row["profile_id"], "name": "", "runs": 0, "last": None})
        entry["runs"] += row["runs"]
        if entry["last"] is None or row["last"] > entry["last"]:
            entry["last"], entry["name"] = row["last"], row["profile_name"] or "(no profile)"
    out = sorted(merged.values(), key=lambda p: p["name"].lower())
    for entry in out:
        entry["last_finished_at"] = entry.pop("last").astimezone(UTC).isoformat()
    return out


def _columns(rows: list[tuple[Any, ...]], names: list[ColumnName]) -> dict[str, Sequence[Any]]:
    """Rows -> {name: column}, transposed in C: a Python loop over 100,000 rows per series would cost more
    than the query."""
    columns: dict[str, Sequence[Any]] = {}
    for name, column in zip(names, zip(*rows, strict=True), strict=True):
        if isinstance(name, tuple):
            columns.update(zip(name, zip(*column, strict=True), strict=True))
        else:
            columns[name] = column
    return columns


def _profile_series(disk: Disk, profile: dict[str, Any], columns: dict[str, Sequence[Any]], points: int) -> dict:
    xs, ids = columns["x"], columns["id"]
    limit_of = _limit_lookup(disk, columns)
    totals = _numbers(columns["total"])
    total = _points(xs, totals, ids, points)
    limits_kept = [limit_of(i)[0] for i in total.pop("index")]
    total["efficiency"] = [
        round(y / limit, 4) if limit else None for y, limit in zip(total["y"], limits_kept, strict=True)
    ]
    total["limit"] = limits_kept
    baseline, burst = limit_of(len(xs) - 1)
    return {
        "profile": {key: profile[key] for key in ("key", "id", "name")},
        "runs": len(xs),
        "downsampled": len(xs) > points,
        "block_size_bytes": columns["block_size"][-1] or columns["block_size_parameters"][-1],
        # The lines drawn: the limits of the latest run in the range, at its block size.
        "limits": {"baseline_iops": baseline, "burst_iops": burst},
        "iops": {"total": total, **{d: _series(xs, _numbers(columns[d]), ids, points) for d in DIRECTIONS}},
        "latency_us": {
            d: {p: _series(xs, _numbers(columns[f"{d}_{p}"]), ids, points) for p in CHART_PERCENTILES}
            for d in DIRECTIONS
        },
    }


def _numbers(values: Sequence[Any]) -> Sequence[float | None]:
    """The column with anything but a number (a string in hand-edited JSON) as None; usually as it is."""
    if set(map(type, values)) <= NUMBER_TYPES:
        return values
    return [v if type(v) in NUMBER_TYPES and (v is None or math.isfinite(v)) else None for v in values]


def _kept(ys: Sequence[float | None], points: int) -> list[int]:
    """Indices of the numbers of `ys` that minmax keeps (None, a missing value, is never drawn)."""
    if None not in ys:
        return timeseries.minmax_indices(ys, points)
    present = [i for i, y in enumerate(ys) if y is not None]
    return [present[i] for i in timeseries.minmax_indices([ys[i] for i in present], points)]


def _points(xs: Sequence[int], ys: Sequence[Any], ids: Sequence[int], points: int) -> dict[str, list[Any]]:
    """The kept points as columns (x, y, run) and their indices; itemgetter picks them out in C."""
    kept = _kept(ys, points)
    pick = _picker(kept)
    return {"x": pick(xs), "y": pick(ys), "run": pick(ids), "index": kept}


def _series(xs: Sequence[int], ys: Sequence[Any], ids: Sequence[int], points: int) -> dict[str, list[Any]]:
    out = _points(xs, ys, ids, points)
    del out["index"]
    return out


def _picker(indices: list[int]) -> Any:
    if len(indices) > 1:
        getter = operator.itemgetter(*indices)
        return lambda values: list(getter(values))
    return lambda values: [values[i] for i in indices]


def _limit_lookup(disk: Disk, columns: dict[str, Sequence[Any]]) -> Any:
    """row index -> (baseline, burst) IOPS of that run: its snapshot's, or when it has none (imported before
    snapshots, or its spec could not be evaluated then) the disk's today at the run's block size."""
    effective, iops = _numbers(columns["limit_effective"]), _numbers(columns["limit_iops"])
    burst_effective, burst_iops = _numbers(columns["burst_effective"]), _numbers(columns["burst_iops"])
    block_sizes, block_sizes_asked = columns["block_size"], columns["block_size_parameters"]
    computed: dict[Any, tuple[float | None, float | None]] = {}

    def limit_of(i: int) -> tuple[float | None, float | None]:
        baseline = effective[i] if effective[i] is not None else iops[i]
        if baseline is not None:
            return baseline, burst_effective[i] if burst_effective[i] is not None else burst_iops[i]
        block_size = block_sizes[i] or block_sizes_asked[i]
        if block_size not in computed:
            found = _disk_limits_or_none(disk, block_size)
            computed[block_size] = (
                (found.effective_iops or found.iops, found.effective_burst_iops or found.burst_iops)
                if found
                else (None, None)
            )
        return computed[block_size]

    return limit_of


def _disk_limits_or_none(disk: Disk, block_size: Any) -> limits.Limits | None:
    size = int(block_size) if isinstance(block_size, int | float) and block_size >= 1 else None
    try:
        return disk.limits(block_size=size)
    except limits.SpecError:
        return None


def _limits_error(disk: Disk) -> str | None:
    try:
        disk.limits()
    except limits.SpecError as exc:
        return str(exc)
    return None


def _limits_json(found: limits.Limits | None) -> dict[str, Any] | None:
    if found is None:
        return None
    return {
        "baseline_iops": found.iops,
        "burst_iops": found.burst_iops,
        "throughput_bytes_per_s": found.throughput_bytes_per_s,
        "burst_throughput_bytes_per_s": found.burst_throughput_bytes_per_s,
        "source": found.source,
    }


def _r(value: float) -> float:
    # Hundredths of an IOPS or a µs are more than a chart or a tooltip shows, and keep the JSON small.
    return round(value, 2)


# ----------------------------------------------------------------------------------------- run series


@login_required
@require_GET
def run_series(request: HttpRequest, pk: int) -> JsonResponse:
    run = get_object_or_404(
        Run.objects.select_related("disk").defer("raw_output", "raw_stderr", "command", "progress"),
        pk=pk,
        team=_team(request),
    )
    summary = run.summary if isinstance(run.summary, dict) else {}
    samples = list(
        RunSample.objects.filter(run_id=run.pk).order_by("t_s").values_list("t_s", "read_iops", "write_iops")
    )
    baseline, burst, binding = _run_limits(run, summary)
    total_iops = (summary.get("total") or {}).get("iops")
    return JsonResponse(
        {
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
                "efficiency": round(total_iops / baseline, 4) if total_iops and baseline else None,
            },
            "percentiles": _percentile_curve(summary),
            "histogram": _latency_histogram(summary.get("latency_bins_ns")),
        }
    )


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
