"""A synchronised group's own result, drawn from its members when it ends: each member's measured start (its host's
clock, from the wrapper's `started` file) and the spread of the starts, the windows, the totals and the per-second
series, and the latency merged or not (jobs/sets/group_clocks.py, group_totals.py and group_latency.py compute them;
docs/user-guide/groups.md has the rules).

Only the members that succeeded are counted; the others are listed, with their state. The hosts' clock offsets are
not measured yet: every host's clock is taken as the worker's (offset 0 ± 0), and the result says so."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from jobs import timeseries
from jobs.models import Run, RunSample
from jobs.sets import group_latency, group_totals
from jobs.sets.group_clocks import ClockOffset, start_spread

OFFSETS_NOT_MEASURED = (
    "offsets not measured: each host's clock is taken as the worker's, so the spread is as the hosts' clocks tell it"
)
SAMPLES_WITHOUT_BANDWIDTH = "the per-second samples hold IOPS only: the per-second series has no bandwidth"


def member_name(member: Run) -> str:
    return f"member {(member.set_index or 0) + 1}"


def group_result(members: list[Run]) -> dict[str, Any]:
    """The group's numbers from its members (in member order), JSON-ready."""
    listed = [_listed(member) for member in members]
    counted = [m for m in members if m.state == Run.State.SUCCEEDED and m.started_at is not None]
    result: dict[str, Any] = {"members": listed, "offsets": OFFSETS_NOT_MEASURED}
    if not counted:
        return result | {"why": "no member succeeded with a measured start: the group has no numbers"}
    same_clock = ClockOffset(0.0, 0.0, 0.0)
    runs = [_member(member, same_clock) for member in counted]
    spread = start_spread({run.name: run.start for run in runs}, {run.name: same_clock for run in runs})
    totals = group_totals.totals(runs)
    result["start_spread"] = asdict(spread) | {"text": spread.text()}
    result["windows"] = _windows(totals.windows)
    result["totals"] = {name: _total(getattr(totals, name)) for name in ("all_running", "whole_runs", "span")}
    result["per_second"] = [asdict(second) for second in group_totals.per_second(runs)]
    result["per_second_note"] = SAMPLES_WITHOUT_BANDWIDTH
    result["latency"] = _latency(counted)
    # Side by side over the all-running window where every member measured it; otherwise over each whole run.
    iops = {name: rates.iops for name, rates in totals.all_running.members.items()}
    if len(iops) < len(runs) or None in iops.values():
        iops = {run.name: run.iops for run in runs}
    p99 = {member_name(member): _worst_p99(member) for member in counted}
    result["comparison"] = asdict(group_latency.compare_members(iops, p99))
    return result


def _listed(member: Run) -> dict[str, Any]:
    host = member.disk.host
    return {
        "name": member_name(member), "run": member.pk, "disk": member.disk.label, "host": host.name,
        "state": member.state, "started_at": member.started_at.isoformat() if member.started_at else None,
        "started_epoch": member.started_at.timestamp() if member.started_at else None,
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
