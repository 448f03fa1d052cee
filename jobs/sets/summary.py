"""A sweep's own result, drawn from its members when it ends: every point's numbers (as the disk chart reads a run:
timeseries.run_numbers), and, along its load axis (iodepth or numjobs; the last of them when it varies both), one
curve per value of the other axis, each with its knee and where it reached the vendor's limit
(jobs/analysis/curves.py has the rule).

A point's p50/p99/p99.9 are its worse direction's (a mixed job's read or write, whichever is higher): the latency a
target is held to. A point that did not succeed keeps its place and state, with empty numbers; a curve is drawn
from the points that have IOPS. Stored once, on the set (RunSet.result), so a sweep's page reads one row."""

from __future__ import annotations

from typing import Any

from jobs import timeseries
from jobs.analysis import curves
from jobs.models import Run, RunSet
from jobs.tools import sweep_plan

# The axes a curve runs along: more load in flight. A sweep of neither (block sizes x read shares, the SNIA
# matrix) is a table of points with no curve.
LOAD_FIELDS = ("iodepth", "jobs")
LATENCIES = ("p50", "p99", "p99_9")


def sweep_result(run_set: RunSet, members: list[Run], rule: curves.Rule | None = None) -> dict[str, Any]:
    points = [point_numbers(member) for member in members]
    return {"points": points} | curves_of(run_set.plan, points, str(run_set.base_parameters.get("tool", "fio")), rule)


def point_numbers(member: Run) -> dict[str, Any]:
    """One member as a point of its set: where it is, how it ended, and its numbers (None: not reported)."""
    point: dict[str, Any] = {"index": member.set_index, "point": member.set_point or {}, "run": member.pk,
                             "state": member.state}  # fmt: skip
    numbers = timeseries.run_numbers(member.summary, member.parameters, member.limits_snapshot)
    succeeded = member.state == Run.State.SUCCEEDED
    point["iops"] = numbers["total_iops"] if succeeded else None
    point["bw_bytes_per_s"] = numbers["bw_bytes_per_s"] if succeeded else None
    for name in LATENCIES:
        found = [numbers[f"{d}_{name}_us"] for d in timeseries.DIRECTIONS if numbers[f"{d}_{name}_us"] is not None]
        point[f"{name}_us"] = max(found) if found and succeeded else None
    point["limit_iops"] = numbers["limit_iops"]
    point["burst_iops"] = numbers["burst_iops"]
    point["block_size_bytes"] = numbers["block_size_bytes"]
    return point


def curves_of(plan: Any, points: list[dict[str, Any]], tool: str, rule: curves.Rule | None = None) -> dict[str, Any]:
    """The curves of a sweep's points along its load axis, each with its knee and limit (as sentences too)."""
    rule = rule or curves.Rule()
    fields = [str(axis.get("field")) for axis in (plan or {}).get("axes", []) if isinstance(axis, dict)]
    along = next((field for field in reversed(fields) if field in LOAD_FIELDS), None)
    found: dict[str, Any] = {"axis": along, "rule": {"iops_growth": rule.iops_growth, "p99_growth": rule.p99_growth},
                             "rule_text": rule.text(), "curves": []}  # fmt: skip
    if along is None:
        return found
    split = [field for field in fields if field != along]
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for point in points:
        groups.setdefault(tuple(point["point"].get(field) for field in split), []).append(point)
    name = axis_name(along, tool)
    for key, group in groups.items():
        measured = sorted((p for p in group if p["iops"] is not None), key=lambda p: p["point"].get(along, 0))
        line = [curves.Point(p["point"][along], p["iops"], p["p99_us"], p["limit_iops"]) for p in measured]
        knee = curves.find_knee(line, rule)
        reached = curves.limit_reached(line)
        label = dict(zip(split, key, strict=True))
        found["curves"].append({
            "split": label,
            "label": sweep_plan.point_text(label, tool) if label else "",
            "knee": _knee(knee, measured, along),
            "knee_text": curves.knee_sentence(knee, name),
            "limit_axis": reached.point.axis if reached else None,
            "limit_text": curves.limit_sentence(reached, name) if reached else "",
        })  # fmt: skip
    return found


def axis_name(field: str, tool: str) -> str:
    """How a sentence names the load axis: 'QD 16', 'numjobs 4', 'processes 2'."""
    return {"iodepth": "QD", "jobs": "processes" if tool == "ndisk64" else "numjobs"}.get(field, field)


def _knee(knee: curves.Knee, measured: list[dict[str, Any]], along: str) -> dict[str, Any] | None:
    if knee.point is None:
        return None
    at = next(p for p in measured if p["point"].get(along) == knee.point.axis)
    return {"axis": knee.point.axis, "iops": knee.point.iops, "p99_us": knee.point.p99_us, "run": at["run"],
            "index": at["index"]}  # fmt: skip


# A series name is a RunResult's profile_name: at most this long.
SERIES_NAME_MAX = 100


def knee_series(profile_name: str, result: dict[str, Any]) -> list[tuple[int, str]]:
    """The members that stand for a sweep on its disk's charts: each curve's knee point, under a series of its
    own ("QD sweep · knee", "... · knee (block size 64k)"), so that the knee's IOPS are trended over time
    beside the limit, and judged by compliance, change points and alerts as any series is."""
    found = []
    for curve in result.get("curves", []):
        if curve.get("knee"):
            suffix = " · knee" + (f" ({curve['label']})" if curve.get("label") else "")
            found.append((int(curve["knee"]["run"]), profile_name[: SERIES_NAME_MAX - len(suffix)] + suffix))
    return found


def knee_moved(before: dict[str, Any] | None, after: dict[str, Any], tool: str) -> list[str]:
    """What moved since the sweep before: "knee moved from QD 16 to QD 4" per curve whose knee moved (a knee that
    appeared or went is said too); nothing when there was no sweep before."""
    if not before:
        return []
    name = axis_name(str(after.get("axis")), tool)
    earlier = {curve.get("label", ""): curve.get("knee") for curve in before.get("curves", [])}
    moved = []
    for curve in after.get("curves", []):
        label = curve.get("label", "")
        if label not in earlier:
            continue
        old, new = earlier[label], curve.get("knee")
        where = f" ({label})" if label else ""
        if old and new and old["axis"] != new["axis"]:
            moved.append(f"knee moved from {name} {old['axis']:g} to {name} {new['axis']:g}{where}")
        elif old and not new:
            moved.append(f"knee at {name} {old['axis']:g} gone{where}: {curve.get('knee_text', '')}")
        elif new and not old:
            moved.append(f"knee appeared at {name} {new['axis']:g}{where}")
    return moved
