"""A group-size sweep's own result, drawn from its members: for each size, the group's total IOPS while every member
ran (jobs/sets/group_result.py, over the all-running window) and each member's IOPS over that window, and where
adding members stops adding IOPS (jobs/sets/group_latency.py saturation); its end when its members have ended.

A size is counted once all its members have ended and succeeded; a size with a member that did not succeed, or
whose members never all ran at once, has no point on the curve, and says why."""

from __future__ import annotations

import statistics
from typing import Any

from jobs.models import Run, RunSet
from jobs.sets import group_latency, group_result, group_sizes


def sizes_result(run_set: RunSet, members: list[Run]) -> dict[str, Any]:
    """The sweep's numbers from its members (in set order) so far, JSON-ready: its sizes, and the saturation
    sentence over the sizes counted."""
    sizes = [_size(step, members[step.first : step.first + step.members]) for step in _steps(run_set)]
    counted = [size for size in sizes if size["total_iops"] is not None]
    points = [group_latency.SizePoint(size["members"], size["total_iops"], size["member_iops"]) for size in counted]
    found = group_latency.saturation(points)
    return {
        "sizes": sizes,
        "saturation": {
            "members": found.point.members if found.point else None,
            "text": found.why,
            "gain_per_doubling": found.gain,
            "left_out": [size["members"] for size in sizes if size["total_iops"] is None],
        },
    }


def sizes_ending(run_set: RunSet, members: list[Run]) -> tuple[str, str]:
    """The sweep's state and explanation once its members have ended: "partial: sizes 1 and 2 of 3 succeeded;
    size 3: member 2 on host X failed: why" when a size did not all succeed."""
    steps = _steps(run_set)
    whole = [step for step in steps if all(m.state == Run.State.SUCCEEDED for m in _of(step, members))]
    count = f"{len(whole)} of {len(steps)} sizes succeeded"
    if run_set.cancel_requested:
        return RunSet.State.CANCELLED, f"cancelled: {count}"
    if len(whole) == len(steps):
        return RunSet.State.SUCCEEDED, f"finished: {count}"
    ended = [m for m in members if m.state not in (Run.State.SUCCEEDED, Run.State.SKIPPED)]
    if not ended:
        return RunSet.State.FAILED, f"partial: {count}"
    first = ended[0]
    where = group_sizes.place(run_set.plan["sizes"], first.set_index or 0)
    return (
        RunSet.State.FAILED,
        f"partial: {count}; {where} on host {first.disk.host.name} {first.state}: {first.explanation}",
    )


def _steps(run_set: RunSet) -> list[group_sizes.Step]:
    return group_sizes.steps(run_set.plan["sizes"])


def _of(step: group_sizes.Step, members: list[Run]) -> list[Run]:
    return members[step.first : step.first + step.members]


def _size(step: group_sizes.Step, members: list[Run]) -> dict[str, Any]:
    """One size: its members (runs, disks, states), and its numbers once every member succeeded."""
    found: dict[str, Any] = {
        "number": step.number, "members": step.members, "state": _state(members),
        "runs": [{"run": m.pk, "disk": m.disk.label, "host": m.disk.host.name, "state": m.state} for m in members],
        "total_iops": None, "member_iops": [], "mean_iops": None, "min_iops": None, "max_iops": None,
        "window_s": None, "spread": None, "why": None,
    }  # fmt: skip
    if found["state"] != Run.State.SUCCEEDED:
        found["why"] = _not_counted(found["state"])
        return found
    group = group_result.group_result(members)
    total = (group.get("totals") or {}).get("all_running") or {}
    per_member = [(total.get("members") or {}).get(group_result.member_name(m), {}).get("iops") for m in members]
    if total.get("iops") is None or None in per_member:
        found["why"] = total.get("why") or group.get("why") or "no IOPS over the window while every member ran"
        return found
    return found | {
        "total_iops": total["iops"], "member_iops": per_member, "mean_iops": statistics.fmean(per_member),
        "min_iops": min(per_member), "max_iops": max(per_member),
        "window_s": (total.get("window") or {}).get("seconds"), "spread": (group.get("start_spread") or {}).get("text"),
    }  # fmt: skip


def _state(members: list[Run]) -> str:
    """A size's state: succeeded when every member did, waiting or running while any has not ended, else the
    state of the first member that did not succeed (failed, cancelled, skipped, …)."""
    if all(m.state == Run.State.SUCCEEDED for m in members):
        return Run.State.SUCCEEDED
    if all(m.state == Run.State.PENDING for m in members):
        return "waiting"
    if any(not m.is_final for m in members):
        return Run.State.RUNNING
    return next(m.state for m in members if m.state != Run.State.SUCCEEDED)


def _not_counted(state: str) -> str:
    if state in ("waiting", Run.State.RUNNING):
        return f"{state}: its numbers come when its members have ended"
    return f"{state}: a size is drawn only when every member succeeded"
