"""Groups side by side: two to eight synchronised groups of the team, each with its three totals (and their
windows), its limit and the all-running total's share of it, its start spread and the spread of its members' IOPS,
and each member's IOPS, member by member. The numbers are the groups' stored results (jobs/sets/group_result.py);
nothing is computed again but the limit where a group did not store one (jobs/sets/group_history.py).

The query is ?sets=12,15 (or sets repeated), with errors naming the parameter as the other comparisons do."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobs.models import RunSet, Team
from jobs.results.stats import StatsError
from jobs.sets import group_history

MIN_GROUPS, MAX_GROUPS = 2, 8
# The group's three totals (jobs/sets/group_totals.py), as the rows name them.
TOTALS = {
    "all_running": "Total while every member ran",
    "whole_runs": "Each member's whole run, summed",
    "span": "From the first start to the last end",
}


def parse(params: Mapping[str, Any], team: Team) -> list[RunSet]:
    """The groups ?sets= names, in the order given: 2 to 8 ended groups of the team."""
    getlist = getattr(params, "getlist", None)
    given = getlist("sets") if getlist else [params.get("sets") or ""]
    parts = [part.strip() for item in given for part in str(item).split(",") if part.strip()]
    if bad := next((part for part in parts if not (part.isascii() and part.isdigit() and len(part) < 19)), None):
        raise StatsError("sets", f"sets takes group ids, e.g. sets=12,15; {bad[:20]!r} is not one.")
    ids = list(dict.fromkeys(int(part) for part in parts))
    if not MIN_GROUPS <= len(ids) <= MAX_GROUPS:
        raise StatsError("sets", f"Give {MIN_GROUPS} to {MAX_GROUPS} groups to compare (sets=12,15); "
                                 f"{len(ids)} {'was' if len(ids) == 1 else 'were'} given.")  # fmt: skip
    found = RunSet.objects.filter(team=team, pk__in=ids).select_related("disk__host").in_bulk()
    for pk in ids:
        group = found.get(pk)
        if group is None or group.kind != RunSet.Kind.GROUP:
            raise StatsError("sets", f"No group {pk} in your team: give the ids of your team's groups.")
        if not group.is_final:
            raise StatsError("sets", f"Group {pk} has not ended: compare it once it has ({group.explanation}).")
    return [found[pk] for pk in ids]


def comparison(groups: list[RunSet]) -> dict[str, Any]:
    """Each group as a column, and the members' IOPS as rows (member 1 of each group side by side, ...)."""
    columns = [_column(group) for group in groups]
    most = max(len(column["members"]) for column in columns)
    rows = [
        {"name": f"member {n + 1}", "cells": [c["members"][n] if n < len(c["members"]) else None for c in columns]}
        for n in range(most)
    ]
    totals = [{"name": label, "cells": [c["totals"].get(name) for c in columns]} for name, label in TOTALS.items()]
    return {"columns": columns, "total_rows": totals, "member_rows": rows,
            "same_series": len({_series_key(g) for g in groups}) == 1}  # fmt: skip


def _series_key(group: RunSet) -> tuple[str, frozenset[int]]:
    return group.profile_name, group_history.disks_of(group)


def _column(group: RunSet) -> dict[str, Any]:
    result = group.result if isinstance(group.result, dict) else {}
    limit = group_history.limit_of(group)
    totals = result.get("totals") or {}
    all_running = totals.get("all_running") or {}
    by_name = {member.get("name"): member for member in result.get("members") or []}
    running = all_running.get("members") or {}
    whole = (totals.get("whole_runs") or {}).get("members") or {}
    # As the group's own comparison: over the all-running window where every member measured it, else each whole run.
    measured = [rates.get("iops") for rates in running.values()]
    use_running = bool(running) and len(running) == len(whole) and None not in measured
    members = []
    for name, listed in by_name.items():
        rates = (running if use_running else whole).get(name) or {}
        members.append({"name": name, "disk": listed.get("disk"), "host": listed.get("host"), "run": listed.get("run"),
                        "state": listed.get("state"), "iops": rates.get("iops"),
                        "bytes_per_s": rates.get("bytes_per_s")})  # fmt: skip
    iops = all_running.get("iops")
    return {
        "set": group,
        "totals": {name: totals[name] for name in TOTALS if name in totals},
        "limit": limit,
        "share_text": group_history.share_text(iops, limit.get("iops")),
        "start_spread": (result.get("start_spread") or {}).get("text", ""),
        "comparison": result.get("comparison") or {},
        "why": result.get("why", ""),
        "members": members,
        "members_over": "while every member ran" if use_running else "over each member's whole run",
    }
