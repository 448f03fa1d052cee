"""What a set shows, for the API and the downloads alike: its result (stored once it ended; until then drawn from
its members so far), its curves again under other knee thresholds, and its stored plan as a person reads it."""

from __future__ import annotations

from typing import Any

from jobs.analysis import curves
from jobs.models import Run, RunSet
from jobs.sets import group_sizes_result, summary
from jobs.tools import sweep_plan


def members(run_set: RunSet) -> list[Run]:
    return list(run_set.members.select_related("disk__host").order_by("set_index"))


def group_plan(run_set: RunSet) -> dict[str, Any]:
    """A group's stored plan (its disks in member order, the backend's caps where set) with its count and words."""
    plan = run_set.plan if isinstance(run_set.plan, dict) else {}
    disks = [int(pk) for pk in plan.get("disks") or []]
    caps = {name: float(plan[name]) for name in ("cap_iops", "cap_mb_s") if plan.get(name) is not None}
    by_fio = run_set.run_by_fio
    return {
        "disks": disks,
        **caps,
        **({"synchronised_by": RunSet.BY_FIO} if by_fio else {}),
        "count": len(disks),
        "text": f"{len(disks)} members, one a disk, "
        + ("started together by fio's client/server mode" if by_fio else "started at one instant"),
    }


def group_sizes_plan(run_set: RunSet) -> dict[str, Any]:
    """A group-size sweep's stored plan (its disks in member order, its sizes) with its member runs and words."""
    plan = run_set.plan if isinstance(run_set.plan, dict) else {}
    disks = [int(pk) for pk in plan.get("disks") or []]
    sizes = [int(size) for size in plan.get("sizes") or []]
    listed = ", ".join(str(size) for size in sizes)
    return {
        "disks": disks,
        "sizes": sizes,
        "members": sum(sizes),
        "text": f"{len(sizes)} group sizes ({listed} members) on {len(disks)} disks: {sum(sizes)} member runs, "
        "each size started at one instant once the smaller ones have ended",
    }


def group_sizes_result_of(run_set: RunSet, members_now: list[Run] | None = None) -> dict[str, Any]:
    """A group-size sweep's sizes and saturation sentence: the stored ones once it ended, else drawn from its
    members so far (a size not ended has no numbers, and says why)."""
    if run_set.is_final and isinstance(run_set.result, dict):
        return run_set.result
    return group_sizes_result.sizes_result(run_set, members(run_set) if members_now is None else members_now)


def result_of(run_set: RunSet, members_now: list[Run] | None = None, rule: curves.Rule | None = None) -> dict[str, Any]:
    """The set's result: the stored one once it ended, else its points so far (a point not ended has empty
    numbers) with their curves. With a rule, the curves are drawn again under its thresholds (the points stay)."""
    if run_set.is_final and isinstance(run_set.result, dict):
        result = run_set.result
    else:
        result = summary.sweep_result(run_set, members(run_set) if members_now is None else members_now)
    if rule is None:
        return result
    tool = str((run_set.base_parameters or {}).get("tool", "fio"))
    return result | summary.curves_of(run_set.plan, result.get("points", []), tool, rule)


def stored_plan(run_set: RunSet) -> sweep_plan.Plan | None:
    """The plan as the set stored it (RunSet.plan, jobs/sets/requesting.py plan_json), for plan_text; None when it
    is not a sweep's. The ramp is what the point's seconds hold beyond the base profile's runtime."""
    plan = run_set.plan if isinstance(run_set.plan, dict) else {}
    try:
        axes = tuple(sweep_plan.Axis(str(a["field"]), tuple(int(v) for v in a["values"])) for a in plan["axes"])
        each = int(plan["seconds_per_point"])
    except (KeyError, TypeError, ValueError):
        return None
    runtime = (run_set.base_parameters or {}).get("runtime_s")
    runtime = runtime if isinstance(runtime, int) and 0 < runtime <= each else each
    return sweep_plan.Plan(axes, each - runtime, runtime) if axes else None
