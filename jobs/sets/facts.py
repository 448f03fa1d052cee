"""What a set's page shows, and what the disk and run pages say of a set: its progress, its points as table rows,
its plan in words, and the chart data (the page's series.json). The result itself, under the knee rule asked for,
is jobs/sets/reading.py's, as the API reads it: stored once the sweep ended, drawn from its members until then, so
the page fills in point by point while the sweep runs."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from jobs import figures, units
from jobs.analysis import curves
from jobs.models import Disk, Run, RunSet
from jobs.sets import group_clocks, group_sizes, reading, summary
from jobs.tools import sweep_plan

# The latencies the hockey stick draws, as the points name them and as a person reads them.
LATENCY_LABELS = {"p50_us": "p50", "p99_us": "p99", "p99_9_us": "p99.9"}
# What the charts read of a point of a curve.
CHARTED = ("iops", "limit_iops", "burst_iops", "run", "state", *LATENCY_LABELS)


def page(run_set: RunSet, rule: curves.Rule | None = None) -> dict[str, Any]:
    """What the sweep's page shows under the knee rule (None: the default one), for the team's page and its share
    link's alike."""
    members = reading.members(run_set)
    result = reading.result_of(run_set, members, rule)
    return {
        "run_set": run_set,
        "title": f"{run_set.label.capitalize()} · {run_set.profile_name} on {run_set.disk.label}",
        "progress": progress(run_set, members),
        "plan_words": plan_words(run_set),
        "axes_words": axes_words(run_set),
        "result": result,
        "rows": rows(run_set, result),
        "fields": field_names(run_set),
    }


def group_page(run_set: RunSet) -> dict[str, Any]:
    """What a group's page shows: its members side by side, its result as stored once it ended (the spread, the
    totals, the limit, the latency merged or not) and its per-second chart's data."""
    result = run_set.result if run_set.is_final and isinstance(run_set.result, dict) else {}
    totals = result.get("totals") or {}
    runs = list(run_set.members.select_related("disk__host").order_by("set_index"))
    listed = {entry.get("run"): entry for entry in result.get("members") or []}
    spread = result.get("start_spread") or {}
    places = group_clocks.decimal_places(spread.get("spread_s") or 0.0, spread.get("uncertainty_s") or 0.0)
    comparison = result.get("comparison") or {}
    return {
        "run_set": run_set,
        "title": f"{run_set.label.capitalize()} · {run_set.profile_name}",
        "members": runs,
        "rows": [_group_row(run, listed.get(run.pk) or {}, comparison, places) for run in runs],
        "result": result,
        "comparison": comparison,
        # An imported fio --client run keeps fio's own "All clients" total beside benchweb's (jobs/imports/groups.py).
        "totals": [_with_mb_per_s(totals[name]) for name in ("all_running", "whole_runs", "span") if name in totals]
        + ([_with_mb_per_s(result["fio_total"])] if result.get("fio_total") else []),
        "limit": result.get("limit"),
        "latency": [_latency_table(found) for found in (result.get("latency") or {}).values()],
        "chart": _group_chart(result),
        "span_start": _moment((result.get("windows") or {}).get("span")),
    }


def _with_mb_per_s(total: dict[str, Any]) -> dict[str, Any]:
    return total | {"mb_per_s": _mb_per_s(total.get("bytes_per_s"))}


def _mb_per_s(bytes_per_s: float | None) -> float | None:
    """MB/s (10^6 bytes a second) as the pages show bandwidth; None: not reported."""
    return bytes_per_s / 1e6 if bytes_per_s is not None else None


def _group_row(run: Run, entry: dict[str, Any], comparison: dict[str, Any], places: int) -> dict[str, Any]:
    """A member's numbers beside the others': IOPS as its tool printed them, its start on the common clock after the
    first member's (to the spread's places), its host's clock offset ± uncertainty or why there is none."""
    name = entry.get("name", "")
    offset, uncertainty = entry.get("clock_offset_s"), entry.get("clock_uncertainty_s")
    start = entry.get("start_s")
    return {
        "run": run,
        "name": name or f"member {(run.set_index or 0) + 1}",
        "iops_shown": figures.total_iops_shown(run.summary) if "iops" in entry else None,
        "all_running_iops": entry.get("all_running_iops"),
        "mb_per_s": _mb_per_s(entry.get("bytes_per_s")),
        "p99_us": entry.get("p99_us"),
        "start_text": f"{start:.{places}f} s" if start is not None else "",
        "clock_text": _offset_text(offset, uncertainty),
        "clock_why": entry.get("clock_why", ""),
        "slowest": bool(name) and comparison.get("slowest") == name,
        "worst_p99": bool(name) and comparison.get("worst_p99") == name,
    }


def _offset_text(offset: float | None, uncertainty: float | None) -> str:
    if offset is None or uncertainty is None:
        return ""
    return group_clocks.plus_minus(offset, uncertainty, signed=True)


# The group's latency table: its percentiles as people write them.
GROUP_PERCENTILE_LABELS = {"p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "p99_9": "p99.9",
                           "p99_99": "p99.99"}  # fmt: skip


def _latency_table(found: dict[str, Any]) -> dict[str, Any]:
    pooled = found.get("pooled_us") or {}
    worst, median = found.get("worst_us") or {}, found.get("median_us") or {}
    return {
        "direction": found.get("direction", ""),
        "merged": bool(found.get("merged")),
        "label": found.get("label", ""),
        "rows": [
            {"label": label, "pooled": pooled.get(key), "worst": worst.get(key), "median": median.get(key)}
            for key, label in GROUP_PERCENTILE_LABELS.items()
        ],
    }


def _group_chart(result: dict[str, Any]) -> dict[str, Any] | None:
    """The per-second chart's data: seconds since the first member's start on the common clock, the group's total
    IOPS, whether every member ran in that second; the all-running window; the group's limit."""
    span = (result.get("windows") or {}).get("span")
    seconds = result.get("per_second") or []
    if not span or not seconds:
        return None
    begin = span["start"]
    together = (result.get("windows") or {}).get("all_running")
    limit = result.get("limit") or {}
    return {
        "seconds": [
            {"x": round(s["t"] - begin, 3), "iops": s["iops"], "every": s["every"], "members": s["members"]}
            for s in seconds
        ],
        "members": len([m for m in result.get("members") or [] if "iops" in m]),
        "all_running": {"start": together["start"] - begin, "end": together["end"] - begin} if together else None,
        "limit_iops": limit.get("iops"),
        "limit_text": limit.get("text", ""),
    }


def _moment(window: dict[str, Any] | None) -> datetime | None:
    return datetime.fromtimestamp(window["start"], tz=UTC) if window else None


def group_sizes_page(run_set: RunSet) -> dict[str, Any]:
    """What a group-size sweep's page shows: its disks in order, each size's numbers (stored once it ended, drawn
    from its members so far until then), the saturation sentence, and the chart's data."""
    result = reading.group_sizes_result_of(run_set)
    disks = Disk.objects.select_related("host").in_bulk(run_set.plan["disks"])
    sizes = result.get("sizes", [])
    running = next((size for size in sizes if size["state"] == Run.State.RUNNING), None)
    return {
        "run_set": run_set,
        "title": f"{run_set.label.capitalize()} · {run_set.profile_name}",
        "disks": [disks[pk] for pk in run_set.plan["disks"] if pk in disks],
        "result": result,
        "sizes": sizes,
        "running": running,
        "ended": sum(size["state"] not in ("waiting", Run.State.RUNNING) for size in sizes),
        "chart": {
            "sizes": [{key: size[key] for key in CHARTED_SIZE} for size in sizes],
            "saturation": (result.get("saturation") or {}).get("members"),
            "final": run_set.is_final,
        },
    }


# What the group-size sweep's chart reads of each size.
CHARTED_SIZE = ("members", "state", "total_iops", "mean_iops", "min_iops", "max_iops")


def tool_of(run_set: RunSet) -> str:
    return str(run_set.base_parameters.get("tool", "fio"))


def plan_words(run_set: RunSet) -> str:
    """'6 points × 1 min = 6 min', or the total alone where the plan cannot be read back."""
    plan = reading.stored_plan(run_set)
    if plan is not None:
        return sweep_plan.plan_text(plan)
    return units.format_duration(int((run_set.plan or {}).get("total_s") or 0))


def axes_words(run_set: RunSet) -> str:
    """'block size 4k,64k × iodepth 1-256 x2': what the sweep varies, in the profile form's syntax."""
    axes = [sweep_plan.Axis(str(a["field"]), tuple(a["values"])) for a in (run_set.plan or {}).get("axes", [])]
    return plan_axes_words(axes, tool_of(run_set))


def plan_axes_words(axes: Iterable[sweep_plan.Axis], tool: str) -> str:
    return " × ".join(
        f"{sweep_plan.KINDS[axis.field].name(tool)} {sweep_plan.format_axis(axis.field, axis.values)}" for axis in axes
    )


def progress(run_set: RunSet, members: list[Run]) -> dict[str, Any]:
    """Which point runs (1-based, None when none does), how many have ended, of how many."""
    running = next((m for m in members if m.state in Run.ACTIVE_STATES), None)
    return {
        "running": (running.set_index or 0) + 1 if running else None,
        "running_run": running,
        "ended": sum(m.is_final for m in members),
        "count": len(members),
    }


def rows(run_set: RunSet, result: dict[str, Any]) -> list[dict[str, Any]]:
    """The points table: each point's fields as the plan names them, its state and run, its numbers (None: none
    reported), and the knee marked on the point it is at."""
    tool = tool_of(run_set)
    knees = {c["knee"]["index"]: c for c in result.get("curves", []) if c.get("knee")}
    fields = [str(axis["field"]) for axis in (run_set.plan or {}).get("axes", [])]
    names = field_names(run_set)
    found = []
    for point in result.get("points", []):
        values = point.get("point") or {}
        found.append(point | {
            "number": (point.get("index") or 0) + 1,
            "values": [(name, _value_text(f, values.get(f))) for name, f in zip(names, fields, strict=True)],
            "text": sweep_plan.point_text(in_plan_order(run_set.plan, values), tool),
            "is_knee": point.get("index") in knees,
            "mb_per_s": _mb_per_s(point.get("bw_bytes_per_s")),
        })  # fmt: skip
    return found


def field_names(run_set: RunSet) -> list[str]:
    tool = tool_of(run_set)
    return [sweep_plan.KINDS[str(axis["field"])].name(tool) for axis in (run_set.plan or {}).get("axes", [])]


def knee_words(result: dict[str, Any] | None) -> str:
    """Every curve's knee in one line, as the disk page lists its sweeps: '4k: knee at QD 16: …; 64k: no knee: …'."""
    found = (result or {}).get("curves") or []
    return "; ".join(f"{c['label']}: {c['knee_text']}" if c.get("label") else c["knee_text"] for c in found)


# The disk page lists this many of its latest sweeps.
RECENT_SWEEPS = 10


def recent_sweeps(disk: Disk) -> list[dict[str, Any]]:
    """A disk's latest sweeps, newest first, each with its knees in one line."""
    found = RunSet.objects.filter(disk=disk, kind=RunSet.Kind.SWEEP).order_by("-created_at", "-pk")[:RECENT_SWEEPS]
    return [{"set": run_set, "knees": knee_words(run_set.result)} for run_set in found]


def member_place(run: Run) -> str:
    """'point 3 of 6 of sweep 12' ('member 2 of 3 of group 14', 'member 1 of size 2 (2 members) of group-size sweep
    15') for a member of a set; '' for any other run."""
    if run.run_set_id is None or run.run_set is None:
        return ""
    plan = run.run_set.plan or {}
    if run.run_set.kind == RunSet.Kind.GROUP_SIZES:
        return f"{group_sizes.place(plan['sizes'], run.set_index or 0)} of {run.run_set.label}"
    count = len(plan.get("points") or plan.get("disks") or []) or run.run_set.members.count()
    noun = "member" if run.run_set.kind == RunSet.Kind.GROUP else "point"
    return f"{noun} {(run.set_index or 0) + 1} of {count} of {run.run_set.label}"


def in_plan_order(plan: Any, point: dict[str, Any]) -> dict[str, Any]:
    """A point's fields in the order of its sweep's axes (the first outer). A stored point is a JSON object, whose
    keys PostgreSQL's jsonb keeps in an order of its own; the plan's axes are a list, kept in order."""
    order = [str(axis.get("field")) for axis in (plan or {}).get("axes", []) if isinstance(axis, dict)]
    return {field: point[field] for field in order if field in point} | point


def member_point(run: Run) -> str:
    """The fields a member sets on its sweep's base profile, 'iodepth 16, block size 64k'; '' for any other run."""
    if not run.set_point:
        return ""
    point = in_plan_order(run.run_set.plan if run.run_set else None, run.set_point)
    return sweep_plan.point_text(point, str((run.parameters or {}).get("tool", "fio")))


def series(run_set: RunSet, result: dict[str, Any]) -> dict[str, Any]:
    """The set page's two charts: IOPS along the load axis (one line per curve, the limits at each point's block
    size, the knee marked) and latency against IOPS (p50/p99/p99.9 per curve); without a load axis, each point's
    IOPS by its name."""
    tool = tool_of(run_set)
    along = result.get("axis")
    points = result.get("points", [])
    answer: dict[str, Any] = {"axis": along, "axis_name": summary.axis_name(along, tool) if along else None,
                              "state": run_set.state, "final": run_set.is_final}  # fmt: skip
    if along is None:
        answer["points"] = [_bar(in_plan_order(run_set.plan, p.get("point") or {}), p, tool) for p in points]
        return answer
    answer["curves"] = [_curve(curve, points, along, tool) for curve in result.get("curves", [])]
    return answer


def _bar(fields: dict[str, Any], point: dict[str, Any], tool: str) -> dict[str, Any]:
    shown = {name: point.get(name) for name in ("iops", "limit_iops", "burst_iops", "run")}
    return {"label": sweep_plan.point_text(fields, tool)} | shown


def _curve(curve: dict[str, Any], points: list[dict[str, Any]], along: str, tool: str) -> dict[str, Any]:
    split = curve.get("split") or {}
    mine = [p for p in points if all((p.get("point") or {}).get(f) == v for f, v in split.items())]
    mine.sort(key=lambda p: (p.get("point") or {}).get(along, 0))
    return {
        "label": curve.get("label") or "",
        "knee": curve.get("knee"),
        "knee_text": curve.get("knee_text", ""),
        "limit_text": curve.get("limit_text", ""),
        "points": [{"x": (p.get("point") or {}).get(along)} | {name: p.get(name) for name in CHARTED} for p in mine],
        "block_size": units.short_size(mine[0]["block_size_bytes"]) if mine and mine[0].get("block_size_bytes") else "",
    }


def _value_text(field: str, value: Any) -> str:
    if value is None:
        return ""
    if sweep_plan.KINDS[field].size:
        return units.short_size(int(value))
    return f"{value} %" if field == "read_percent" else str(value)
