"""A synchronised group's own result, drawn from its members when it ends: each member's measured start (its host's
clock, from the wrapper's `started` file) and the spread of the starts, the windows, the totals and the per-second
series, and the latency merged or not (jobs/sets/group_clocks.py, group_totals.py and group_latency.py compute them;
docs/user-guide/groups.md has the rules).

Only the members that succeeded are counted; the others are listed, with their state. Each host's clock offset is
the one measured over its session at the member's launch (jobs/runs/launching.py); a member without one has its
host's clock taken as the worker's (offset 0 ± 0), and the result names it. The group's limit is the lower of its
counted members' theoretical limits summed and the backend's cap the plan gives (cap_iops, cap_mb_s)."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from jobs import timeseries
from jobs.models import Run, RunSample
from jobs.sets import group_latency, group_totals
from jobs.sets.group_clocks import ClockOffset, start_spread

OFFSETS_NOT_MEASURED = (
    "offsets not measured: each host's clock is taken as the worker's, so the spread is as the hosts' clocks tell it"
)
OFFSETS_MEASURED = "each host's clock offset measured over its SSH session (NTP style: the shortest of its probes)"
SAMPLES_WITHOUT_BANDWIDTH = "the per-second samples hold IOPS only: the per-second series has no bandwidth"
# A host whose offset was not measured: its clock is taken as the worker's.
SAME_CLOCK = ClockOffset(0.0, 0.0, 0.0)


def member_name(member: Run) -> str:
    return f"member {(member.set_index or 0) + 1}"


def group_result(members: list[Run], plan: dict[str, Any] | None = None) -> dict[str, Any]:
    """The group's numbers from its members (in member order) and its plan (the backend's cap), JSON-ready."""
    listed = [_listed(member) for member in members]
    counted = [m for m in members if m.state == Run.State.SUCCEEDED and m.started_at is not None]
    offsets = {member_name(m): measured_offset(m.clock_offset) for m in counted}
    unmeasured = [name for name, offset in offsets.items() if offset is None]
    result: dict[str, Any] = {"members": listed, "offsets": _offsets_text(unmeasured, len(counted)),
                              "offsets_not_measured": unmeasured}  # fmt: skip
    if not counted:
        why = "no member succeeded with a measured start: the group has no numbers"
        return result | {"why": why, "limit": limit_of_members([], plan or {})}
    runs = [_member(member, offsets[member_name(member)] or SAME_CLOCK) for member in counted]
    spread = start_spread({run.name: run.start for run in runs}, {run.name: run.offset for run in runs})
    totals = group_totals.totals(runs)
    result["start_spread"] = asdict(spread) | {"text": spread.text()}
    result["windows"] = _windows(totals.windows)
    result["totals"] = {name: _total(getattr(totals, name)) for name in ("all_running", "whole_runs", "span")}
    result["per_second"] = [asdict(second) for second in group_totals.per_second(runs)]
    result["per_second_note"] = SAMPLES_WITHOUT_BANDWIDTH
    result["latency"] = _latency(counted)
    result["limit"] = limit_of_members(counted, plan or {})
    # Side by side over the all-running window where every member measured it; otherwise over each whole run.
    iops = {name: rates.iops for name, rates in totals.all_running.members.items()}
    if len(iops) < len(runs) or None in iops.values():
        iops = {run.name: run.iops for run in runs}
    p99 = {member_name(member): _worst_p99(member) for member in counted}
    result["comparison"] = asdict(group_latency.compare_members(iops, p99)) | {"over": _over(iops, totals)}
    first = min(run.offset.to_common(run.start) for run in runs)
    for entry in listed:
        entry |= _side_by_side(entry["name"], runs, totals, p99, first)
    return result


def measured_offset(stored: Any) -> ClockOffset | None:
    """A member's stored clock offset (Run.clock_offset), or None when it was not measured."""
    if not isinstance(stored, dict):
        return None
    values = [_number(stored.get(key)) for key in ("offset_s", "uncertainty_s", "delay_s")]
    offset, uncertainty, delay = (v if v is not None and math.isfinite(v) else None for v in values)
    if offset is None or uncertainty is None or delay is None:
        return None
    return ClockOffset(offset, uncertainty, delay)


def _offsets_text(unmeasured: list[str], counted: int) -> str:
    if counted and not unmeasured:
        return OFFSETS_MEASURED
    if len(unmeasured) == counted:
        return OFFSETS_NOT_MEASURED
    whose = f"{', '.join(unmeasured)}'s host{'s' if len(unmeasured) > 1 else ''}"
    return f"offsets not measured for {', '.join(unmeasured)}: {whose} clock taken as the worker's; the others measured"


def _over(iops: dict[str, float | None], totals: group_totals.Totals) -> str:
    measured = {name: rates.iops for name, rates in totals.all_running.members.items()}
    return "all_running" if iops == measured else "whole_runs"


def _side_by_side(
    name: str,
    runs: list[group_totals.Member],
    totals: group_totals.Totals,
    p99: dict[str, float | None],
    first: float,
) -> dict[str, Any]:
    """A counted member's numbers beside the others': its IOPS and bytes/s over the all-running window and over
    its whole run, its worse direction's p99, its start on the common clock after the first member's."""
    run = next((run for run in runs if run.name == name), None)
    if run is None:
        return {}
    together = totals.all_running.members.get(name)
    return {
        "iops": run.iops, "bytes_per_s": run.bytes_per_s, "p99_us": p99.get(name),
        "all_running_iops": together.iops if together else None,
        "start_s": run.offset.to_common(run.start) - first,
    }  # fmt: skip


def limit_of_members(counted: list[Run], plan: dict[str, Any]) -> dict[str, Any]:
    """The group's limit: the counted members' limits at their block size summed, against the backend's cap."""
    if not counted:
        return {"iops": None, "bytes_per_s": None, "binds": "", "why": "no member succeeded",
                "how": "no limit: no member succeeded", "text": "no limit: no member succeeded"}  # fmt: skip
    limits = {}
    for member in counted:
        snapshot = member.limits_snapshot if isinstance(member.limits_snapshot, dict) else {}
        limits[member_name(member)] = group_totals.Rates(
            timeseries.snapshot_limits(snapshot)["limit_iops"],
            _number(snapshot.get("effective_throughput_bytes_per_s") or snapshot.get("throughput_bytes_per_s")),
        )
    block_size = timeseries.run_numbers(counted[0].summary, counted[0].parameters, None)["block_size_bytes"]
    cap_mb_s = _number(plan.get("cap_mb_s"))
    try:
        found = group_totals.group_limit(
            limits, block_size, _number(plan.get("cap_iops")), cap_mb_s * 1e6 if cap_mb_s is not None else None
        )
    except ValueError as exc:
        return {"iops": None, "bytes_per_s": None, "binds": "", "why": str(exc), "how": f"no limit: {exc}",
                "text": f"no limit: {exc}"}  # fmt: skip
    return asdict(found) | {"how": found.how(), "text": found.text()}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _listed(member: Run) -> dict[str, Any]:
    host = member.disk.host
    offset = measured_offset(member.clock_offset)
    return {
        "name": member_name(member), "run": member.pk, "disk": member.disk.label, "host": host.name,
        "state": member.state, "started_at": member.started_at.isoformat() if member.started_at else None,
        "started_epoch": member.started_at.timestamp() if member.started_at else None,
        "clock_offset_s": offset.offset_s if offset else None,
        "clock_uncertainty_s": offset.uncertainty_s if offset else None,
        "clock_why": "" if offset else str((member.clock_offset or {}).get("why") or "offset not measured"),
    }  # fmt: skip


def _member(member: Run, offset: ClockOffset) -> group_totals.Member:
    """A succeeded member as the pure modules take it: its start and end on its host's clock, its samples and
    its whole-run IOPS and bytes/s."""
    assert member.started_at is not None  # counted members have started
    start = member.started_at.timestamp()
    progress = member.progress or {}
    if progress.get("elapsed_from") == "host" and isinstance(progress.get("elapsed_s"), int | float):
        end = start + float(progress["elapsed_s"])
    else:
        end = max(start, (member.finished_at or member.started_at).timestamp())
    samples = [
        (start + t_s, (read or 0.0) + (write or 0.0), None)
        for t_s, read, write in RunSample.objects.filter(run=member).values_list("t_s", "read_iops", "write_iops")
    ]
    numbers = timeseries.run_numbers(member.summary, member.parameters, member.limits_snapshot)
    return group_totals.Member(
        name=member_name(member), start=start, end=end, offset=offset, samples=samples,
        iops=numbers["total_iops"], bytes_per_s=numbers["bw_bytes_per_s"],
    )  # fmt: skip


def _windows(found: group_totals.Windows) -> dict[str, Any]:
    return {
        "all_running": _window(found.all_running), "span": _window(found.span), "last_started": found.last_started,
        "first_done": found.first_done, "last_done": found.last_done,
    }  # fmt: skip


def _window(window: group_totals.Window | None) -> dict[str, float] | None:
    return None if window is None else {"start": window.start, "end": window.end, "seconds": window.seconds}


def _total(total: group_totals.Total) -> dict[str, Any]:
    return {
        "what": total.what, "window": _window(total.window), "iops": total.iops, "bytes_per_s": total.bytes_per_s,
        "members": {name: asdict(rates) for name, rates in total.members.items()}, "why": total.why,
    }  # fmt: skip


def _latency(counted: list[Run]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for direction in timeseries.DIRECTIONS:
        by_member = {
            member_name(m): latency
            for m in counted
            if (latency := group_latency.member_latency(m.summary or {}, direction)) is not None
        }
        if merged := group_latency.group_latency(direction, by_member):
            found[direction] = asdict(merged)
    return found


def _worst_p99(member: Run) -> float | None:
    numbers = timeseries.run_numbers(member.summary, member.parameters, member.limits_snapshot)
    found = [numbers[f"{d}_p99_us"] for d in timeseries.DIRECTIONS if numbers[f"{d}_p99_us"] is not None]
    return max(found) if found else None
