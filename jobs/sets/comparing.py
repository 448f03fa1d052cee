"""Sweeps compared, curve on curve: a sweep profile's sweeps on disk A against disk B, or on one disk before
against after a moment. Each side's curve is the median, point by point, of its sweeps that measured the point;
where each side has enough sweeps (jobs/analysis/stats.py MIN_RUNS), every point's IOPS and the knee's IOPS are
compared with the statistics the Compare page uses for runs (Mann-Whitney by default, or Welch).

The query reads as the Compare page's does (?a_disk=&b_disk= or ?disk=&split=, profile, test), with the same
errors naming the parameter (jobs/results/stats.py); the profile is a sweep profile's name."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any

from django.db.models import QuerySet

from jobs import clock
from jobs.analysis import stats
from jobs.models import Disk, RunSet, Team
from jobs.results.stats import StatsError, disk_param, moment
from jobs.sets import summary
from jobs.tools import sweep_plan

# The newest sweeps of a side that are compared.
MAX_SWEEPS = 200


@dataclass(frozen=True)
class Query:
    a: Disk
    b: Disk | None
    split: datetime | None
    profile: str
    test: str
    zone: tzinfo = UTC


@dataclass(frozen=True)
class Side:
    label: str
    sweeps: list[tuple[int, Any, dict[str, Any]]]  # (set id, finished at, result), newest first


def parse(params: Mapping[str, str], team: Team, zone: tzinfo = UTC) -> Query:
    test = params.get("test") or stats.MANN_WHITNEY
    if test not in stats.TESTS:
        raise StatsError("test", f"{test!r} is not a test; choose {' or '.join(stats.TESTS)}.")
    if params.get("a_disk") or params.get("b_disk"):
        if params.get("disk") or params.get("split"):
            raise StatsError("disk", "Give a_disk and b_disk, or disk and split, not both.")
        a, b, split = disk_param(params, "a_disk", team), disk_param(params, "b_disk", team), None
        if a.pk == b.pk:
            raise StatsError("b_disk", "b_disk is a_disk; to compare one disk with itself, give disk and split.")
    elif params.get("disk"):
        a, b, split = disk_param(params, "disk", team), None, moment(params.get("split") or "", zone)
    else:
        raise StatsError("disk", "Give a_disk and b_disk (two disks' sweeps) or disk and split (one disk's sweeps "
                                 "before and after an ISO date such as 2026-11-20).")  # fmt: skip
    disks = [a] if b is None else [a, b]
    return Query(a, b, split, _profile(disks, params.get("profile") or ""), test, zone)


def comparison(query: Query) -> dict[str, Any]:
    """Both sides' median curves, every point's comparison and the knees'; what the page and the API show."""
    a, b = _sides(query)
    names = (a.label, b.label)
    if not a.sweeps and not b.sweeps:
        raise StatsError("profile", f"No finished sweep of {query.profile!r} on either side: give the name of a sweep "
                                    "profile these disks have run.")  # fmt: skip
    latest = a.sweeps[0] if a.sweeps else b.sweeps[0]
    plan = RunSet.objects.filter(pk=latest[0]).values_list("plan", "base_parameters").first() or ({}, {})
    tool = str((plan[1] or {}).get("tool", "fio"))
    keys = _point_keys([a, b])
    points = []
    for key in keys:
        values = [_measured(side, key) for side in (a, b)]
        found = stats.compare([v for v, _ in values[0]], [v for v, _ in values[1]], test=query.test, names=names)
        points.append({"point": dict(key), "label": sweep_plan.point_text(dict(key), tool), "a": _median(values[0]),
                       "b": _median(values[1]), "comparison": found.as_dict()})  # fmt: skip
    knees = [[at for _, _, result in side.sweeps if (at := _first_knee(result)) is not None] for side in (a, b)]
    knee = stats.compare(knees[0], knees[1], test=query.test, names=names)
    return {
        "profile": query.profile,
        "test": query.test,
        "min_sweeps": stats.MIN_RUNS,
        "a": {"label": a.label, "sweeps": [pk for pk, _, _ in a.sweeps]},
        "b": {"label": b.label, "sweeps": [pk for pk, _, _ in b.sweeps]},
        "points": points,
        "curves": {side: _curves(plan[0], points, side, tool) for side in ("a", "b")},
        "knee": knee.as_dict() | {"text": f"Knee IOPS: {knee.text}"},
        "series": _series(plan[0], points, (a.label, b.label), tool),
    }


def compared() -> QuerySet[RunSet]:
    """The sets compared curve on curve: not groups or group-size sweeps, whose result has no points (their pages
    show their own)."""
    return RunSet.objects.exclude(kind__in=RunSet.TOGETHER_KINDS)


def _profile(disks: list[Disk], given: str) -> str:
    """The sweep profile given, else the one every disk has sweeps of; an error naming the choices otherwise."""
    if given:
        return given
    names = [set(compared().filter(disk=disk, finished_at__isnull=False).values_list("profile_name", flat=True))
             for disk in disks]  # fmt: skip
    shared = sorted(set.intersection(*names)) or sorted(set.union(*names))
    if len(shared) == 1:
        return shared[0]
    if not shared:
        raise StatsError("profile", "None of these disks has a finished sweep yet: give profile=<a sweep's name>.")
    raise StatsError("profile", f"Sweeps of several profiles: give profile=<name>, one of {', '.join(shared)}.")


def _sides(query: Query) -> tuple[Side, Side]:
    if query.b is not None:
        return _side(query, query.a, f"A: {query.a.label}", None, None), _side(
            query, query.b, f"B: {query.b.label}", None, None
        )
    assert query.split is not None  # parse gives a split to a one-disk query
    when = clock.show(query.split, query.zone, clock.MINUTES)
    return (
        _side(query, query.a, f"before {when}", None, query.split),
        _side(query, query.a, f"after {when}", query.split, None),
    )


def _side(query: Query, disk: Disk, label: str, start: datetime | None, end: datetime | None) -> Side:
    found = compared().filter(disk=disk, profile_name=query.profile, result__isnull=False,
                                  finished_at__isnull=False)  # fmt: skip
    if start is not None:
        found = found.filter(finished_at__gte=start)
    if end is not None:
        found = found.filter(finished_at__lt=end)
    rows = found.order_by("-finished_at").values_list("pk", "finished_at", "result")[:MAX_SWEEPS]
    return Side(label, [(pk, at, result) for pk, at, result in rows if isinstance(result, dict)])


def _point_keys(sides: list[Side]) -> list[tuple[tuple[str, Any], ...]]:
    """Every point either side measured, in the order of the newest sweep that has it."""
    keys: dict[tuple[tuple[str, Any], ...], None] = {}
    for side in sides:
        for _, _, result in side.sweeps:
            for point in result.get("points", []):
                keys.setdefault(tuple(point.get("point", {}).items()), None)
    return list(keys)


def _measured(side: Side, key: tuple[tuple[str, Any], ...]) -> list[tuple[float, float | None]]:
    """(IOPS, p99 µs) of every sweep of the side that measured this point."""
    wanted = dict(key)
    return [(float(point["iops"]), point.get("p99_us"))
            for _, _, result in side.sweeps for point in result.get("points", [])
            if point.get("point") == wanted and point.get("iops") is not None]  # fmt: skip


def _median(values: list[tuple[float, float | None]]) -> dict[str, Any]:
    p99 = [p for _, p in values if p is not None]
    return {"n": len(values), "iops": statistics.median([v for v, _ in values]) if values else None,
            "p99_us": statistics.median(p99) if p99 else None}  # fmt: skip


def _first_knee(result: dict[str, Any]) -> float | None:
    curves = result.get("curves") or []
    knee = curves[0].get("knee") if curves else None
    return float(knee["iops"]) if knee else None


def _curves(plan: Any, points: list[dict[str, Any]], side: str, tool: str) -> list[dict[str, Any]]:
    """The side's median curve along the load axis, with its knee (summary.curves_of, as a sweep's own)."""
    median_points = [{"point": p["point"], "iops": p[side]["iops"], "p99_us": p[side]["p99_us"], "limit_iops": None,
                      "run": None, "index": i} for i, p in enumerate(points)]  # fmt: skip
    return list(summary.curves_of(plan, median_points, tool)["curves"])


def _series(plan: Any, points: list[dict[str, Any]], labels: tuple[str, str], tool: str) -> dict[str, Any]:
    """Both sides' median curves as a sweep page's charts take them (static/js/chart-set.js): one line per side and
    curve along the load axis, the knee marked, p99 against IOPS."""
    along = next((f for f in reversed(_fields(plan)) if f in summary.LOAD_FIELDS), None)
    if along is None:
        return {"axis": None, "axis_name": None, "points": [], "curves": []}
    split = [field for field in _fields(plan) if field != along]
    curves = []
    for side, label in zip(("a", "b"), labels, strict=True):
        knees = {curve["label"]: curve for curve in _curves(plan, points, side, tool)}
        groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for point in points:
            groups.setdefault(tuple(point["point"].get(f) for f in split), []).append(point)
        for key, group in groups.items():
            name = sweep_plan.point_text(dict(zip(split, key, strict=True)), tool) if split else ""
            group.sort(key=lambda p: p["point"].get(along, 0))
            curves.append({
                "label": f"{label} — {name}" if name else label,
                "knee": knees.get(name, {}).get("knee"),
                "knee_text": knees.get(name, {}).get("knee_text", ""),
                "points": [{"x": p["point"].get(along), "iops": p[side]["iops"], "p99_us": p[side]["p99_us"]}
                           for p in group],
                "block_size": "",
            })  # fmt: skip
    # Every sweep compared has ended: nothing to reload for.
    return {"axis": along, "axis_name": summary.axis_name(along, tool), "curves": curves, "final": True}


def _fields(plan: Any) -> list[str]:
    return [str(axis.get("field")) for axis in (plan or {}).get("axes", []) if isinstance(axis, dict)]
