"""A group's limit and its history: the groups of one profile on one set of disks, kept over time.

The **limit** of a group is what its members were promised together: the sum of each member's limit at its block
size, as its limits snapshot recorded it when it was made, and no more than the plan's cap where the plan has one
(plan["cap_iops"], plan["cap_mb_s"]: a shared backend's own promise). A member without a limit leaves the sum
empty, naming it: never a sum of some members against all of them. The rule is jobs/sets/group_result.py's (the
pure `group_totals.group_limit`); `limit_of` reads the one a group stored when it ended.

A group's **series** is every group of the same profile on the same disks, in any order (plan["disks"] as a set):
its history charts each one's all-running total (what the backend gave while every member ran) against its limit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jobs import timeseries
from jobs.limits.efficiency import percent_text
from jobs.models import Run, RunSet
from jobs.sets import group_result

# A history holds at most this many groups, the newest.
MAX_GROUPS = 500


def limit_of(run_set: RunSet, members: Sequence[Run] | None = None) -> dict[str, Any]:
    """The group's limit (IOPS, bytes/s, and as `text` which figure binds or why there is none): its result's
    "limit" where it stored one (jobs/sets/group_result.py, when it ended), else computed by the same rule from its
    succeeded members (`members`, or read now)."""
    stored = (run_set.result or {}).get("limit") if isinstance(run_set.result, dict) else None
    if isinstance(stored, dict) and ("iops" in stored or "bytes_per_s" in stored):
        return {"iops": stored.get("iops"), "bytes_per_s": stored.get("bytes_per_s"), "text": stored.get("how", "")}
    if members is None:
        members = list(run_set.members.order_by("set_index"))
    counted = [member for member in members if member.state == Run.State.SUCCEEDED]
    found = group_result.limit_of_members(counted, run_set.plan if isinstance(run_set.plan, dict) else {})
    return {"iops": found.get("iops"), "bytes_per_s": found.get("bytes_per_s"), "text": found.get("how", "")}


def disks_of(run_set: RunSet) -> frozenset[int]:
    """The group's disks as a set: its series is every group of its profile on these."""
    return _disks(run_set.plan)


def _disks(plan: Any) -> frozenset[int]:
    return frozenset(pk for pk in (plan or {}).get("disks", []) if isinstance(pk, int))


def series_ids(run_set: RunSet) -> list[int]:
    """The ids of the groups of the same profile on the same disks (in any order) as this one that ended, oldest
    first; read without their results, which hold every second of the group."""
    disks = disks_of(run_set)
    found = (
        RunSet.objects.filter(team_id=run_set.team_id, kind=RunSet.Kind.GROUP, profile_name=run_set.profile_name,
                              finished_at__isnull=False, disk_id__in=disks)
        .order_by("-finished_at", "-pk")
        .values_list("pk", "plan")
    )  # fmt: skip
    return [pk for pk, plan in found[: MAX_GROUPS * 4] if _disks(plan) == disks][:MAX_GROUPS][::-1]


def series(run_set: RunSet) -> list[RunSet]:
    """The groups of the series (series_ids), oldest first."""
    ids = series_ids(run_set)
    found = RunSet.objects.in_bulk(ids)
    return [found[pk] for pk in ids]


def history(run_set: RunSet) -> dict[str, Any]:
    """The series' points, oldest first: each group's all-running total, its limit and its spread."""
    groups = series(run_set)
    points = [point(group, limit_of(group)) for group in groups]
    return {"points": points, "disks": sorted(disks_of(run_set)), "profile": run_set.profile_name}


def point(group: RunSet, limit: Mapping[str, Any]) -> dict[str, Any]:
    """One group of a history: when it ended, its all-running total (empty where it had none, with why), its limit,
    the total's share of the limit, and the members' spread."""
    result = group.result if isinstance(group.result, dict) else {}
    total = (result.get("totals") or {}).get("all_running") or {}
    iops, limit_iops = total.get("iops"), limit.get("iops")
    share = iops / limit_iops if iops is not None and limit_iops else None
    return {
        "set": group.pk, "state": group.state, "finished_at": group.finished_at,
        "ms": int(group.finished_at.timestamp() * 1000) if group.finished_at else None,
        "iops": iops, "bytes_per_s": total.get("bytes_per_s"), "window_s": (total.get("window") or {}).get("seconds"),
        "why": total.get("why") or result.get("why") or "",
        "limit_iops": limit_iops, "limit_bytes_per_s": limit.get("bytes_per_s"), "limit_text": limit.get("text", ""),
        "share": share, "share_text": share_text(iops, limit_iops),
        "spread_percent": (result.get("comparison") or {}).get("spread_percent"),
    }  # fmt: skip


def share_text(iops: float | None, limit_iops: float | None) -> str:
    """A total's share of its limit as the pages show a share ("37 %", cut, never rounded up); '' without both."""
    return percent_text(iops / limit_iops * 100) if iops is not None and limit_iops else ""


def member_figures(member: Run) -> dict[str, float | None]:
    """A member's own IOPS, bytes/s and worse direction's p99 over its whole run, as its run page shows them; empty
    where it did not succeed."""
    if member.state != Run.State.SUCCEEDED:
        return {"iops": None, "bytes_per_s": None, "p99_us": None}
    numbers = timeseries.run_numbers(member.summary, member.parameters, member.limits_snapshot)
    p99 = [numbers[f"{d}_p99_us"] for d in timeseries.DIRECTIONS if numbers[f"{d}_p99_us"] is not None]
    return {"iops": numbers["total_iops"], "bytes_per_s": numbers["bw_bytes_per_s"], "p99_us": max(p99, default=None)}
