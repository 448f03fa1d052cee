"""Chart series and their downsampling (pure: no Django).

A point is a tuple whose first two items are x and y; anything after them (a run id, an efficiency) rides
along untouched. Both downsamplers return a subset of the input in its order, never synthetic averages, so
every point drawn is a real measurement that can be hovered and opened.

Which one the endpoints use, and why:
- `minmax` for a disk's runs over time. The questions asked of that chart are about extremes (the 3 a.m.
  dip a noisy neighbour caused, the one slow run after a change), and min/max buckets keep the lowest and
  highest point of every bucket by construction, whatever else is dropped.
- `lttb` for a run's per-second samples. They are a dense, continuous signal, where min/max buckets turn
  into a zigzag between neighbouring extremes; largest-triangle-three-buckets keeps the visual shape with
  one point per bucket, and still keeps isolated spikes and dips because they span the largest triangles.

A disk's runs are also kept, as they finish, as one row each of the numbers the disk chart draws
(`run_numbers`) and as each UTC day's lowest and highest run of every series (`day_extremes`): min/max
buckets of a day, computed once, so that the all-time chart of 100,000 runs reads a few thousand rows.
"""

from __future__ import annotations

import bisect
import functools
import math
import struct
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

MAX_POINTS = 2000
DAY_MS = 86_400_000
HOUR_MS = 3_600_000
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Point = tuple[Any, ...]

DIRECTIONS = ("read", "write")
CHART_PERCENTILES = ("p50", "p99", "p99_9")
# The disk chart's series -> the number of a run's result that each one draws.
SERIES = {
    "total": "total_iops",
    "read": "read_iops",
    "write": "write_iops",
    **{f"{d}_{p}": f"{d}_{p}_us" for d in DIRECTIONS for p in CHART_PERCENTILES},
}


# The disk chart's default range holds every run, or at least this many: enough to draw a trend.
ENOUGH_RUNS = 100


def fitting_range(runs_within: Mapping[str, int]) -> str:
    """The disk chart's default range: the first of `runs_within` (range name -> runs it holds, shortest first,
    ending with "all") that holds every run or at least ENOUGH_RUNS. A new disk's runs of today spread over 24
    hours instead of piling into one column of 30 days; a disk run hourly for a year opens on its last week."""
    wanted = min(list(runs_within.values())[-1], ENOUGH_RUNS)
    return next(name for name, runs in runs_within.items() if runs >= wanted)


def minmax(points: Sequence[Point], limit: int = MAX_POINTS) -> list[Point]:
    """At most `limit` points: the first, the last, and the lowest and highest y of each bucket between."""
    return [points[i] for i in minmax_indices([p[1] for p in points], limit)]


def minmax_indices(ys: Sequence[float], limit: int = MAX_POINTS) -> list[int]:
    """The indices `minmax` keeps, in order. Works on the y values alone so that a caller holding columns
    (100,000 runs) builds tuples only for the points it keeps; min() and max() over slices run in C."""
    if limit < 4:
        raise ValueError(f"minmax needs a limit of at least 4 points; got {limit}.")
    count = len(ys)
    if count <= limit:
        return list(range(count))
    buckets = (limit - 2) // 2
    inner = count - 2
    out = [0]
    for bucket in range(buckets):
        start = 1 + bucket * inner // buckets
        end = 1 + (bucket + 1) * inner // buckets
        segment = ys[start:end]
        low = start + segment.index(min(segment))
        high = start + segment.index(max(segment))
        out.extend((low, high) if low < high else (high, low) if high < low else (low,))
    out.append(count - 1)
    return out


def lttb(points: Sequence[Point], limit: int = MAX_POINTS) -> list[Point]:
    """Largest-triangle-three-buckets (Steinarsson 2013): at most `limit` points, the first and last kept.

    1. Split the points between the first and the last into `limit - 2` buckets of equal count.
    2. Walk the buckets in order; in each, keep the point that makes the largest triangle with the point
       kept from the bucket before and the average point of the bucket after.
    """
    if limit < 3:
        raise ValueError(f"lttb needs a limit of at least 3 points; got {limit}.")
    count = len(points)
    if count <= limit:
        return list(points)
    size = (count - 2) / (limit - 2)
    out = [points[0]]
    kept = 0
    for bucket in range(limit - 2):
        start = int(bucket * size) + 1
        end = int((bucket + 1) * size) + 1
        next_end = min(int((bucket + 2) * size) + 1, count)
        following = points[end:next_end] or points[-1:]
        avg_x = sum(p[0] for p in following) / len(following)
        avg_y = sum(p[1] for p in following) / len(following)
        ax, ay = points[kept][0], points[kept][1]
        best, best_area = start, -1.0
        for index in range(start, end):
            x, y = points[index][0], points[index][1]
            # Twice the triangle's area; only the comparison matters.
            area = abs((ax - avg_x) * (y - ay) - (ax - x) * (avg_y - ay))
            if area > best_area:
                best, best_area = index, area
        out.append(points[best])
        kept = best
    out.append(points[-1])
    return out


def series(rows: Iterable[Sequence[Any]], x: int, y: int, *extra: int) -> list[Point]:
    """Points (row[x], row[y], *row[extra]) of the rows whose y is a finite number; rows in x order."""
    out: list[Point] = []
    for row in rows:
        value = row[y]
        # JSON may hold null, or (from a hand-edited import) a string: only finite numbers are drawn.
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            continue
        out.append((row[x], value, *(row[e] for e in extra)))
    return out


def log_edges(low: float, high: float, bins: int = 40) -> list[float]:
    """`bins + 1` log-spaced edges from low to high (both > 0); one bin when they are equal."""
    if low <= 0 or high < low:
        raise ValueError(f"log_edges needs 0 < low <= high; got {low} and {high}.")
    if high == low:
        return [low, high]
    ratio = math.log(high / low)
    return [low * math.exp(ratio * i / bins) for i in range(bins)] + [high]


def histogram(counts: Mapping[float, int], edges: Sequence[float]) -> list[int]:
    """Counts keyed by value, summed into the bins between `edges`. Values below the first edge join the
    first bin and values above the last join the last, so no count is lost; an edge belongs to the bin above
    it, except the last edge, which closes the last bin."""
    totals = [0] * (len(edges) - 1)
    for value, n in counts.items():
        index = bisect.bisect_right(edges, value) - 1
        totals[min(max(index, 0), len(totals) - 1)] += n
    return totals


def run_numbers(summary: Any, parameters: Any, snapshot: Any) -> dict[str, Any]:
    """What the disk chart draws of a run, out of its canonical summary, parameters and limits snapshot.

    Anything but a finite number (a string in hand-edited JSON) is None. IOPS and µs keep their hundredths,
    more than a chart or a tooltip shows; the summary keeps every digit."""
    summary = summary if isinstance(summary, dict) else {}
    numbers: dict[str, Any] = {
        "total_iops": _hundredths(_at(summary, "total", "iops")),
        "read_iops": _hundredths(_at(summary, "read", "iops")),
        "write_iops": _hundredths(_at(summary, "write", "iops")),
        "bw_bytes_per_s": _whole(_at(summary, "total", "bw_bytes_per_s")),
        **{f"{d}_{p}_us": _hundredths(_at(summary, d, "clat_us", p)) for d in DIRECTIONS for p in CHART_PERCENTILES},
        "block_size_bytes": _block_size(summary) or _block_size(parameters),
    }
    return numbers | snapshot_limits(snapshot)


def snapshot_limits(snapshot: Any) -> dict[str, float | None]:
    """The baseline and burst IOPS of a limits snapshot (Limits.as_dict()) at its block size."""
    snapshot = snapshot if isinstance(snapshot, dict) else {}
    baseline = _first_number(snapshot, "effective_iops", "iops")
    burst = _first_number(snapshot, "effective_burst_iops", "burst_iops") if baseline is not None else None
    return {"limit_iops": baseline, "burst_iops": burst}


# Where a day row (as `day_extremes` takes it) holds the run's limit IOPS: after its id, its ms and SERIES.
DAY_LIMIT_AT = 2 + len(SERIES)


def day_extremes(rows: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """One day's min/max bucket of a profile's runs on a disk, from rows (run id, ms, the numbers of SERIES in
    its order, limit IOPS; anything after them is not read) in time order: how many, the first and the last, and
    for every series its lowest and highest run (the earliest of equals, as `minmax` keeps) in time order, as
    `early` and `late` (the same run twice when one run is both), with the limits of the total's two."""
    columns = list(zip(*rows, strict=True))
    ids, xs, limits = columns[0], columns[1], columns[DAY_LIMIT_AT]
    out: dict[str, Any] = {"runs": len(rows), "first_run": ids[0], "last_run": ids[-1], "last_ms": xs[-1]}
    for name, ys in zip(SERIES, columns[2:DAY_LIMIT_AT], strict=True):
        present = [i for i, y in enumerate(ys) if y is not None]
        ends: list[int] | tuple[None, None] = (None, None)
        if present:
            ends = sorted((min(present, key=ys.__getitem__), max(present, key=ys.__getitem__)))
        for end, i in zip(("early", "late"), ends, strict=True):
            out[f"{name}_{end}"] = None if i is None else ys[i]
            out[f"{name}_{end}_run"] = None if i is None else ids[i]
            out[f"{name}_{end}_ms"] = None if i is None else xs[i]
            if name == "total":
                out[f"total_{end}_limit"] = None if i is None else limits[i]
    return out


def day_flags(rows: Sequence[Sequence[Any]], extremes: Mapping[str, Any]) -> dict[str, Any]:
    """The steady flag and warning count of each run `day_extremes` kept (None where a series has none), from
    the same rows carrying (steady, warning count) after the limit: the chart draws them per point, and
    reading them per run at every request cost an all-time chart half its time (bench/chart_endpoint.py)."""
    flags = {row[0]: row[DAY_LIMIT_AT + 1 : DAY_LIMIT_AT + 3] for row in rows}
    out: dict[str, Any] = {}
    for name in SERIES:
        for end in ("early", "late"):
            steady, warnings = flags.get(extremes[f"{name}_{end}_run"], (None, None))
            out[f"{name}_{end}_steady"], out[f"{name}_{end}_warnings"] = steady, warnings
    return out


# What a day keeps of each of its two runs of a series: time, value, run, the run's steady flag and warning count
# (and for the total, its limit). Time, value and run come first, in this order (the chart's merging of days reads
# them so).
DAY_POINT_FIELDS = ("_ms", "", "_run", "_steady", "_warnings")


def day_point_fields(series: str) -> tuple[str, ...]:
    return (*DAY_POINT_FIELDS, "_limit") if series == "total" else DAY_POINT_FIELDS


# The fields of `day_extremes` and `day_flags` the chart draws (per series its early run's fields, then its late
# run's), each with its suffix.
_SUFFIXED = [(f"{s}_{end}{suffix}", suffix) for s in SERIES for end in ("early", "late")
             for suffix in day_point_fields(s)]  # fmt: skip
DAY_POINTS = tuple(field for field, _ in _SUFFIXED)


# How `pack_day_points` keeps each kind of field (by its suffix), and what it writes for None: times and run ids as
# 64-bit integers, values and limits as doubles, warning counts as 16-bit integers, steady flags as a byte (0 not
# steady, 1 steady).
_KINDS = {"_ms": "q", "_run": "q", "": "d", "_limit": "d", "_warnings": "h", "_steady": "B"}
# (A day's numbers are finite: `run_numbers` keeps no other.)
_NONE: dict[str, Any] = {"q": -(2**63), "d": -math.inf, "h": -(2**15), "B": 2}
_FLAGS = (False, True, None)


# Each kind's fields in DAY_POINTS order, the widest kind first, so that every field sits at a multiple of its size
# and, the record padded to a multiple of 8 bytes, the days joined read as one array of any kind.
_PACKED = {kind: [field for field, suffix in _SUFFIXED if _KINDS[suffix] == kind] for kind in ("q", "d", "h", "B")}
_LAYOUT = struct.Struct("<" + "".join(f"{len(fields)}{kind}" for kind, fields in _PACKED.items()))
_PACKING = struct.Struct(_LAYOUT.format + f"{-_LAYOUT.size % 8}x")


def _places() -> dict[str, tuple[str, int]]:
    """field -> (its kind, its index in a day's record read as an array of that kind)."""
    places, offset = {}, 0
    for kind, fields in _PACKED.items():
        size = struct.calcsize(kind)
        for field in fields:
            places[field], offset = (kind, offset // size), offset + size
    return places


_PLACES = _places()


def pack_day_points(day: Mapping[str, Any]) -> bytes:
    """The DAY_POINTS of a day (`day_extremes` | `day_flags`) as one fixed-size record of plain numbers, each kind
    of field together (_PACKED): `unpack_day_points` reads the days joined as one array of records. The
    all-time chart reads this one cell a day instead of 92 columns."""
    return _PACKING.pack(*[_NONE[kind] if day[field] is None else day[field] for kind, fields in _PACKED.items()
                           for field in fields])  # fmt: skip


def unpack_day_points(packed: Sequence[bytes | memoryview], spans: Sequence[tuple[int, int]]) -> list[list[list[Any]]]:
    """For each span (its first day, the day after its last) of days packed by `pack_day_points`: its DAY_POINTS as
    columns, a list a field with a value a day, None where the day has none. The days are read as one numpy record
    array (`_days`), a column made into Python numbers in one call."""
    days = _days(packed)
    return [[_values(days[field][start:stop], _PLACES[field][0]) for field in DAY_POINTS] for start, stop in spans]


def _days(packed: Sequence[bytes | memoryview]) -> Any:
    """Days packed by `pack_day_points`, joined as one numpy record array of _day_dtype (a view, not a copy)."""
    import numpy as np  # here, not at start-up: the pages import this module (bench/startup.py)

    if set(map(len, packed)) - {_PACKING.size}:
        raise ValueError(f"a packed day is not the {_PACKING.size} bytes pack_day_points writes")
    return np.frombuffer(b"".join(packed), dtype=_day_dtype())


# The chart's name of each of timeseries.DAY_POINT_FIELDS (and the limit), in their order.
CHART_FIELDS = ("x", "y", "run", "steady", "warnings", "limit")


def day_series_points(packed: Sequence[bytes | memoryview], spans: Sequence[tuple[int, int]]) -> list[dict[str, Any]]:
    """For each span (its first day, the day after its last) of days packed by `pack_day_points`, in day order: each
    series' points, a list of each CHART_FIELDS field (None where a run has none), of each day's early run then its
    late run (one when it is the same run; none on a day without the series).

    With numpy over every day at once, a field a few calls: the days' numbers become Python numbers only as the
    points drawn, where unpacking every field into lists and interleaving and filtering those cost an all-time
    chart some 20 ms (bench/chart_endpoint.py)."""
    import numpy as np

    days = _days(packed)
    if not spans:
        return []
    out: list[dict[str, Any]] = [{} for _ in spans]
    for series in SERIES:
        early_run, late_run = days[f"{series}_early_run"], days[f"{series}_late_run"]
        keep = np.empty(2 * len(days), dtype=bool)
        keep[0::2] = early_run != _NONE["q"]
        keep[1::2] = late_run != early_run
        # How many points are kept before each day: where each span's points start and end among them.
        before = np.zeros(2 * len(days) + 1, dtype=np.int64)
        np.cumsum(keep, out=before[1:])
        starts, stops = (before[[2 * day for day in ends]].tolist() for ends in zip(*spans, strict=True))
        fields = day_point_fields(series)
        for name, suffix in zip(CHART_FIELDS[: len(fields)], fields, strict=True):
            early, late = days[f"{series}_early{suffix}"], days[f"{series}_late{suffix}"]
            both = np.empty(2 * len(days), dtype=early.dtype)
            both[0::2], both[1::2] = early, late
            values = _values(both[keep], _KINDS[suffix])
            for points, start, stop in zip(out, starts, stops, strict=True):
                points.setdefault(series, {})[name] = values[start:stop]
    return out


@functools.cache
def _day_dtype() -> Any:
    """A packed day as a numpy record: each DAY_POINTS field at its place (_PLACES), little-endian."""
    import numpy as np

    formats = {"q": "<i8", "d": "<f8", "h": "<i2", "B": "u1"}
    sizes = {kind: struct.calcsize(kind) for kind in formats}
    return np.dtype({
        "names": list(DAY_POINTS),
        "formats": [formats[_PLACES[field][0]] for field in DAY_POINTS],
        "offsets": [_offset(field, sizes) for field in DAY_POINTS],
        "itemsize": _PACKING.size,
    })  # fmt: skip


def _offset(field: str, sizes: dict[str, int]) -> int:
    kind, index = _PLACES[field]
    # _PLACES counts in units of its kind from the record's start: each kind's fields start at a multiple of its size.
    return index * sizes[kind]


def _values(numbers: Any, kind: str) -> list[Any]:
    """A numpy array of packed numbers of a kind as Python values, None where they say none (steady flags as
    flags)."""
    import numpy as np

    if kind == "B":
        return cast("list[Any]", np.array(_FLAGS, dtype=object)[numbers].tolist())
    missing = numbers == _NONE[kind]
    if not missing.any():
        return cast("list[Any]", numbers.tolist())
    values = numbers.astype(object)
    values[missing] = None
    return cast("list[Any]", values.tolist())


def day_promise(rows: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """What one day's rows (as `day_extremes` takes them) hold for a disk's compliance that no tolerance changes:
    the first finish, the runs with a promise (a limit above 0 and a measured total) and those without a limit,
    the sum of the promised runs' efficiencies (total / limit), their lowest and highest limit, and for each UTC
    hour of the finish the promised runs and their efficiency sum (`hour_field`: h00_runs, h00_efficiency, ...,
    one pair of plain columns an hour, so that the database sums a long period's days). Whether a
    run missed depends on the tolerance asked, so that is counted from the runs themselves
    (jobs/results/compliance.py)."""
    promised, no_promise, efficiency_sum = 0, 0, 0.0
    limits: list[float] = []
    hours = {hour_field(hour, what): 0 for hour in range(24) for what in ("runs", "efficiency")}
    for row in rows:
        ms, total, limit = row[1], row[2], row[DAY_LIMIT_AT]
        if limit is None or limit <= 0:
            no_promise += 1
            continue
        if total is None:
            continue
        efficiency = total / limit
        promised += 1
        efficiency_sum += efficiency
        limits.append(limit)
        hour = ms // HOUR_MS % 24
        hours[hour_field(hour, "runs")] += 1
        hours[hour_field(hour, "efficiency")] += efficiency
    return {
        "first_ms": rows[0][1] if rows else None,
        "promised": promised,
        "no_promise": no_promise,
        "efficiency_sum": efficiency_sum if promised else None,
        "limit_min": min(limits, default=None),
        "limit_max": max(limits, default=None),
        **hours,
    }


def hour_field(hour: int, what: str) -> str:
    """The day rollup's column of an hour's promised runs ("runs") or their efficiency sum ("efficiency")."""
    return f"h{hour:02d}_{what}"


def epoch_ms(moment: datetime) -> int:
    """Whole milliseconds since the Unix epoch, rounded down, so that a run's day is the UTC date it finished."""
    return (moment - EPOCH) // timedelta(milliseconds=1)


def utc_day(ms: int) -> int:
    """The UTC day of a time in ms since the epoch, as a number of days since 1970-01-01."""
    return ms // DAY_MS


def midnight(day: int) -> datetime:
    """The start of a UTC day numbered as `utc_day` numbers it."""
    return EPOCH + timedelta(days=day)


def _at(doc: dict[str, Any], *path: str) -> float | None:
    value: Any = doc
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return _finite(value)


def _finite(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _first_number(doc: dict[str, Any], *keys: str) -> float | None:
    return next((v for v in map(_finite, map(doc.get, keys)) if v is not None), None)


def _hundredths(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _whole(value: float | None) -> int | None:
    return None if value is None else round(value)


def _block_size(doc: Any) -> int | None:
    size = _finite(doc.get("block_size_bytes")) if isinstance(doc, dict) else None
    return int(size) if size is not None and size >= 1 else None
